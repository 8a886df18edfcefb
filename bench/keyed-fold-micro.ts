// Keyed-view CPU per lend in-process, without a server: the writer's fold of one lend's changes into
// `loans_by_member` (bench/apps/library-keyed), the entry's seal as the batch stores it, and the cache's update at
// the commit, timed over many lends (the member's entry absent before each, as in the keyed-views scenario).
//   node --conditions=writeonce-source --import tsx bench/keyed-fold-micro.ts
import { Either } from 'effect';
import { compileApp } from '../src/domain/compile.ts';
import type { ViewChange } from '../src/domain/catalog.ts';
import { foldKeyedChanges } from '../src/projections/views/keyed-fold.ts';
import { seal } from '../src/log/record.ts';
import { parseViewEntry } from '../src/log/view-entry-record.ts';
import app from './apps/library-keyed/app.ts';

const compiled = Either.getOrThrow(compileApp(app));
const view = compiled.views.get('loans_by_member')!;
const N = Number(process.env.N ?? 200_000);
const changesOf = (k: number): ViewChange[] => {
  const id = `0000000${k}`.slice(-8);
  const event = { seq: 2 * k + 1, at: 1_765_000_000_000 + k, type: 'loans', id, version: 1, kind: 'created' as const, data: { book: '7', member: String(k), status: 'out', due: '2026-12-20' }, command: 'lend', correlation: '00000000-0000-4000-8000-000000000001', actor: { client: 'in-process' } };
  const bookEvent = { seq: 2 * k, at: 1_765_000_000_000 + k, type: 'books', id: '7', version: 3 + k, kind: 'invoked' as const, method: 'check_out', params: {}, data: { out: k }, command: 'lend', correlation: '00000000-0000-4000-8000-000000000001', actor: { client: 'in-process' } };
  return [
    { event: bookEvent, before: { id: '7', version: 2 + k, title: 'A book', copies: 1000000, out: k - 1 }, after: { id: '7', version: 3 + k, title: 'A book', copies: 1000000, out: k } },
    { event, before: null, after: { id, version: 1, ...event.data } },
  ] as unknown as ViewChange[];
};
const inputs = Array.from({ length: 1000 }, (_, k) => changesOf(k + 1));
let sink = 0;
const run = (n: number) => {
  for (let i = 0; i < n; i++) {
    const out = foldKeyedChanges(view, inputs[i % inputs.length], () => undefined);
    if (out._tag !== 'Changed') throw new Error(out.reason);
    for (const e of out.entries) {
      const key = `w!loans_by_member!abcdef0123456789!${e.key}`;
      sink += seal(key, e.text!).length;
      sink += parseViewEntry(e.text!)!.seq;
    }
  }
};
run(20_000);
for (let r = 0; r < 5; r++) {
  const t0 = process.cpuUsage();
  run(N);
  const d = process.cpuUsage(t0);
  console.log(`${((d.user + d.system) / N).toFixed(2)} µs/lend`);
}
if (sink === 0) console.log('');
