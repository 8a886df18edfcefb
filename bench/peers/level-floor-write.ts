// The durable-write floors' write on classic-level (bench/peers/durable-floor.ts, notify-floor.ts): each group of
// waiting requests is one `batch(..., { sync: true })` of an event record under its sequence number and the row
// with its version per request.
import { ClassicLevel } from 'classic-level';
import { eventData, type FloorWrite } from './floor-core.ts';

const pad = (n: number) => String(n).padStart(12, '0');

/** Opens the store in `dir` and answers the floor's group write over it. */
export async function openLevelFloorWrite(dir: string): Promise<(group: ReadonlyArray<FloorWrite>) => Promise<void>> {
  const db = new ClassicLevel<string, string>(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
  await db.open();
  return (group) =>
    db.batch(
      group.flatMap((w) => [
        { type: 'put' as const, key: `e!${pad(w.seq)}`, value: JSON.stringify({ seq: w.seq, type: 'products', id: w.row.id, version: w.row.version, kind: w.kind, data: eventData(w) }) },
        { type: 'put' as const, key: `r!products!${w.row.id}`, value: JSON.stringify(w.row) },
      ]),
      { sync: true },
    );
}
