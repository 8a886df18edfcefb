// The cost of an invariant (issue 21): durable REST `set_price` side by side (bench/lib/side-by-side.ts), the same
// app without (bench/apps/pricing-plain) and with one invariant declared on products (bench/apps/pricing-invariant).
// The ratio is the server CPU per call with the invariant over without (budget: <= 1.05x).
import { renderSideBySide, runSideBySide, type SideBySideResult } from '../lib/side-by-side.ts';
import type { BenchContext } from './context.ts';

export const INVARIANT_BUDGET = 1.05;

export type InvariantResult = SideBySideResult;

export async function runInvariant(ctx: BenchContext): Promise<InvariantResult> {
  const result = await runSideBySide(ctx, 'invariant', [
    { app: 'pricing-plain', label: 'without' },
    { app: 'pricing-invariant', label: 'one invariant' },
  ]);
  if (result.medianRatio > INVARIANT_BUDGET) ctx.warn(`invariant: set_price server CPU with one invariant is ${result.medianRatio.toFixed(3)}x without (budget ${INVARIANT_BUDGET}x)`);
  return result;
}

/** The scenario's section of the report. */
export const renderInvariant = (r: InvariantResult): string =>
  [
    '## Invariant cost (issue 21)',
    '',
    'Durable REST `set_price`, side by side: the same app without and with one invariant declared.',
    '',
    ...renderSideBySide(r, 'with / without', INVARIANT_BUDGET),
    '',
  ].join('\n');
