// Creates a big table fast by writing a fresh classic-level data dir directly, in the server's own format
// (src/log/log-keys.ts, record.ts and classic-level-log.ts): one `created` event per product, its row, the
// id counter, the row count, the checkpoint and the format marker, as the server's batches leave them. Views
// are not written: the server folds them from the log at its first start (and stores them with its next
// batch), as it does for any view it has no stored state for.
import { ClassicLevel } from 'classic-level';
import { CHECKPOINT_KEY, counterKey, eventKey, FORMAT, FORMAT_KEY, rowCountKey, rowKey } from '../../src/log/log-keys.ts';
import { rowPayload } from '../../src/log/level-records.ts';
import { seal } from '../../src/log/record.ts';

const TYPE = 'products';

export interface ProductSpec {
  name: string;
  price: number;
  currency: 'USD' | 'EUR';
}

/** Writes products 1..n (`spec(i)` for product i) into an empty data dir; the server must not be running. */
export async function writeProducts(dir: string, n: number, spec: (i: number) => ProductSpec, batchSize = 10_000): Promise<{ ms: number }> {
  const started = performance.now();
  const db = new ClassicLevel<string, string>(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
  await db.open();
  try {
    const at = Date.now();
    for (let first = 1; first <= n; first += batchSize) {
      const last = Math.min(n, first + batchSize - 1);
      const batch = db.batch();
      for (let i = first; i <= last; i++) {
        const id = String(i);
        const data = spec(i);
        const event = { seq: i, at: at + i, type: TYPE, id, version: 1, schema: 1, kind: 'created', data };
        batch.put(eventKey(i), seal(eventKey(i), JSON.stringify(event)));
        batch.put(rowKey(TYPE, id), seal(rowKey(TYPE, id), rowPayload(1, JSON.stringify({ id, version: 1, ...data }))));
      }
      batch.put(counterKey(TYPE), seal(counterKey(TYPE), String(last)));
      batch.put(rowCountKey(TYPE), seal(rowCountKey(TYPE), String(last)));
      batch.put(CHECKPOINT_KEY, seal(CHECKPOINT_KEY, String(last)));
      batch.put(FORMAT_KEY, seal(FORMAT_KEY, FORMAT));
      await batch.write({ sync: last === n });
    }
    return { ms: performance.now() - started };
  } finally {
    await db.close();
  }
}
