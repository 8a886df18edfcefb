// The one tool every SDK peer exposes, kept identical across them so the only variable is the SDK.
// Storage is an in-memory Map: the peers measure protocol overhead, not durability.
import * as z from 'zod';

export const prices = new Map<string, number>();

// Raw shapes (SDK v1 style) and, built once at module load, the z.object forms SDK v2 takes.
// Module scope matters: zod 4 compiles a parser per schema instance on first use, so building the
// schema inside a per-request factory would charge that compile to every call.
export const setPriceInput = { id: z.string(), price: z.number() };
export const setPriceOutput = { id: z.string(), price: z.number() };
export const setPriceInputSchema = z.object(setPriceInput);
export const setPriceOutputSchema = z.object(setPriceOutput);

export function setPrice({ id, price }: { id: string; price: number }) {
  prices.set(id, price);
  const out = { id, price };
  return {
    content: [{ type: 'text' as const, text: JSON.stringify(out) }],
    structuredContent: out,
  };
}
