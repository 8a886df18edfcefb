// The durable-write floor on classic-level (issue 25; the server is bench/peers/floor-core.ts): each group of
// waiting requests is one `batch(..., { sync: true })` of an event record under its sequence number and the row
// with its version per request. Data dir: $DATA_DIR (the harness makes a fresh one).
import { ClassicLevel } from 'classic-level';
import { eventData, floorServer } from './floor-core.ts';
import { listenAndAnnounce } from './listen.ts';

const db = new ClassicLevel<string, string>(process.env.DATA_DIR!, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
const pad = (n: number) => String(n).padStart(12, '0');

await db.open();
listenAndAnnounce(
  floorServer((group) =>
    db.batch(
      group.flatMap((w) => [
        { type: 'put' as const, key: `e!${pad(w.seq)}`, value: JSON.stringify({ seq: w.seq, type: 'products', id: w.row.id, version: w.row.version, kind: w.kind, data: eventData(w) }) },
        { type: 'put' as const, key: `r!products!${w.row.id}`, value: JSON.stringify(w.row) },
      ]),
      { sync: true },
    ),
  ),
);
