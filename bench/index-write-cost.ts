// The CPU the secondary index records add to a durable write, measured in-process: batches as the writer builds them
// for `set_price` on the pricing sample (the event and the row), written with sync, against the same batches plus the
// records of three indexes (`name`, `price`, `[currency, price]`: two move with each price), the keys computed as the
// writer does (log/classic-level/store-indexes.ts). Alternated rounds on one store each; process CPU (all threads:
// LevelDB's writes and compactions included).
//   node --import tsx bench/index-write-cost.ts      BENCH_ROUNDS (default 6), BENCH_BATCHES (default 1500), BENCH_ENTRIES (default 8)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { indexKey } from '../src/log/classic-level/index-keys.ts';
import { eventKey, rowKey } from '../src/log/classic-level/log-keys.ts';
import { rowPayload } from '../src/log/classic-level/level-records.ts';
import { seal } from '../src/log/record.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const BATCHES = Number(process.env.BENCH_BATCHES ?? 1500);
const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 8);
const PRODUCTS = 1000;
const INDEXES = [['name'], ['price'], ['currency', 'price']];

type Product = { id: string; version: number; name: string; price: number; currency: string };

async function side(indexed: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'wo-index-cost-'));
  const db = new ClassicLevel<string, string>(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
  await db.open();
  const rows = new Map<number, Product>();
  for (let i = 1; i <= PRODUCTS; i++) rows.set(i, { id: String(i), version: 1, name: `item-${i}`, price: i, currency: i % 2 ? 'USD' : 'EUR' });
  let seq = 0;
  const write = async () => {
    const batch = db.batch();
    for (let e = 0; e < ENTRIES; e++) {
      seq++;
      const id = 1 + ((seq * 7919) % PRODUCTS);
      const before = rows.get(id)!;
      const row = { ...before, version: before.version + 1, price: 1 + (seq % 500) };
      rows.set(id, row);
      const event = { seq, at: Date.now(), type: 'products', id: row.id, version: row.version, schema: 1, kind: 'set_price', data: { price: row.price } };
      const ek = eventKey(seq);
      batch.put(ek, seal(ek, JSON.stringify(event)));
      const rk = rowKey('products', row.id);
      batch.put(rk, seal(rk, rowPayload(1, JSON.stringify(row))));
      if (indexed) {
        for (const fields of INDEXES) {
          const old = indexKey('products', fields, before);
          const next = indexKey('products', fields, row);
          if (old === next) continue;
          batch.del(old);
          batch.put(next, '');
        }
      }
    }
    await batch.write({ sync: true });
  };
  for (let i = 0; i < 200; i++) await write(); // warm
  const t0 = process.cpuUsage();
  for (let i = 0; i < BATCHES; i++) await write();
  const used = process.cpuUsage(t0);
  await db.close();
  rmSync(dir, { recursive: true, force: true });
  return (used.user + used.system) / (BATCHES * ENTRIES);
}

const ratios: number[] = [];
const diffs: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const [plain, indexed] = r % 2 === 0 ? [await side(false), await side(true)] : (await Promise.resolve([await side(true), await side(false)])).reverse();
  ratios.push(indexed / plain);
  diffs.push(indexed - plain);
  console.log(`round ${r + 1}: ${plain.toFixed(1)} µs plain, ${indexed.toFixed(1)} µs with three indexes per write (+${(indexed - plain).toFixed(1)} µs)`);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(`median: +${median(diffs).toFixed(1)} µs per write, ${median(ratios).toFixed(3)}x of the store's part of a write (${ENTRIES} writes a batch, sync)`);
