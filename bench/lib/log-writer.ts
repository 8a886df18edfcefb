// Builds a big event log fast by writing the classic-level data dir directly, in the server's own format
// (src/log/classic-level/log-keys.ts, record.ts and classic-level-log.ts): events `e!<seq:16>` as checksummed StoredEvent JSON
// (src/domain/events.ts, each with its actor: a write made in process), their history records `h!...` (history-records.ts),
// rows `r!<type>!<id:12>`, `m!checkpoint`. The dir must have been made by the real
// server first (products created over REST, counters and checkpoint in place); this only appends
// `set_price` events to existing products, round-robin, and leaves rows and checkpoint exactly as the
// server would after committing them. `wo replay` then proves the result is consistent.
import { ClassicLevel } from 'classic-level';
import { CHECKPOINT_KEY, eventKey, rowKey } from '../../src/log/classic-level/log-keys.ts';
import { rowPayload } from '../../src/log/classic-level/level-records.ts';
import { seal, unsealJson } from '../../src/log/record.ts';
import { historyRecord } from '../../src/log/classic-level/history-records.ts';
import type { StoredEvent } from '../../src/domain/events.ts';
const TYPE = 'products';

export interface AppendResult {
  firstSeq: number;
  lastSeq: number;
  events: number;
  products: number;
  ms: number;
  /** bytes of event JSON written */
  bytes: number;
}

/** The last event's seq in a data dir (0 when empty); the server must not be running. */
export async function lastSeqOf(dir: string): Promise<number> {
  const db = new ClassicLevel<string, string>(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
  await db.open();
  try {
    for await (const [key] of db.iterator({ gte: 'e!', lt: 'e!~', reverse: true, limit: 1 })) return Number(key.slice(2));
    return 0;
  } finally {
    await db.close();
  }
}

/** Appends `events` set_price events over the dir's existing products; the server must not be running. */
export async function appendSetPriceEvents(dir: string, events: number, batchSize = 10_000): Promise<AppendResult> {
  const started = performance.now();
  const db = new ClassicLevel<string, string>(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
  await db.open();
  try {
    let lastSeq = 0;
    for await (const [key] of db.iterator({ gte: 'e!', lt: 'e!~', reverse: true, limit: 1 })) lastSeq = Number(key.slice(2));
    const rows: Record<string, unknown>[] = [];
    for await (const [key, value] of db.iterator({ gte: `r!${TYPE}!`, lt: `r!${TYPE}!~` })) rows.push(unsealJson<{ row: Record<string, unknown> }>(key, value).row);
    if (rows.length === 0) throw new Error(`${dir}: no ${TYPE} rows to append events to`);
    const firstSeq = lastSeq + 1;
    let bytes = 0;
    let at = Date.now();
    for (let done = 0; done < events; ) {
      const n = Math.min(batchSize, events - done);
      const batch = db.batch();
      for (let j = 0; j < n; j++) {
        const seq = ++lastSeq;
        const row = rows[(seq - firstSeq) % rows.length];
        const version = (row.version as number) + 1;
        const price = 1 + (seq % 997);
        const event: StoredEvent = {
          seq,
          at: at++,
          type: TYPE,
          id: row.id as string,
          version,
          schema: 1,
          kind: 'invoked',
          method: 'set_price',
          params: { price },
          data: { price },
          actor: { client: 'in-process' },
        };
        const value = JSON.stringify(event);
        bytes += value.length;
        batch.put(eventKey(seq), seal(eventKey(seq), value));
        batch.put(...historyRecord(event));
        row.price = price;
        row.version = version;
      }
      done += n;
      if (done < events) await batch.write();
      else {
        // The last batch carries the rows and the checkpoint, synced: the same atomic shape as a server batch.
        for (const row of rows) {
          const key = rowKey(TYPE, row.id as string);
          batch.put(key, seal(key, rowPayload(1, JSON.stringify(row))));
        }
        batch.put(CHECKPOINT_KEY, seal(CHECKPOINT_KEY, String(lastSeq)));
        await batch.write({ sync: true });
      }
    }
    return { firstSeq, lastSeq, events, products: rows.length, ms: performance.now() - started, bytes };
  } finally {
    await db.close();
  }
}
