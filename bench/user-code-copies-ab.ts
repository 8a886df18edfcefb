// Old against new, in one process without I/O, on what copying values for user code adds (src/domain/codecs.ts,
// `copyData` and `storedDecoder`): the pricing sample's view `evolve` per change (it now gets a copy of the change's
// event, before and after), and the decision of a method on a row with a field typed Unknown (its row is decoded
// from a copy of that field, for `apply` and for the invariant). The two checkouts' code alternated round by round
// (R, default 9, rounds of N calls, default 50000); CPU ns per call, medians, and new/old. The durable REST writes
// themselves: `OLD_ROOT=... KIND=create|set_price node --import tsx bench/write-ab.ts`.
//   OLD_ROOT=/tmp/wo-old node --import tsx bench/user-code-copies-ab.ts
import { Either, Schema } from 'effect';
import { repoRoot } from './lib/wo.ts';

const oldRoot = process.env.OLD_ROOT?.replace(/\/$/, '');
if (!oldRoot) throw new Error('set OLD_ROOT to a checkout of the old code');
const R = Number(process.env.R ?? 9);
const N = Number(process.env.N ?? 50000);

// Both checkouts' modules are typed as this one's: the API used here is the same in both.
const load = async (root: string) => ({
  catalog: (await import(`${root}/src/domain/catalog.ts`)) as typeof import('../src/domain/catalog.ts'),
  compile: (await import(`${root}/src/domain/compile.ts`)) as typeof import('../src/domain/compile.ts'),
  decider: (await import(`${root}/src/domain/decider.ts`)) as typeof import('../src/domain/decide/decider.ts'),
});
const code = { old: await load(oldRoot), new: await load(repoRoot.replace(/\/$/, '')) };
type Side = keyof typeof code;
const pricing = (await import(`${repoRoot}/examples/pricing/app.ts`)).default;

const setup = (side: Side) => {
  const { catalog, compile } = code[side];
  const view = Either.getOrThrow(compile.compileApp(pricing)).views.get('products_by_currency')!;
  const notes = Either.getOrThrow(compile.compileApp(catalog.defineApp({
    name: 'notes',
    entities: {
      notes: catalog.entity({
        fields: { title: Schema.String, meta: Schema.Unknown },
        invariants: { titled: { check: (r: { title: string }) => r.title.length > 0, message: 'needs a title' } },
        methods: { retitle: { params: { title: Schema.String }, apply: (_r: unknown, p: { title: string }) => ({ title: p.title }) } },
      }),
    },
  }))).types.get('notes')!;
  return { view, notes, retitle: notes.methods.get('retitle')! };
};
const sides = { old: setup('old'), new: setup('new') };

const changes = Array.from({ length: 1000 }, (_, i) => ({
  event: { seq: i + 1, at: 1_700_000_000_000, type: 'products', id: String(i + 1), version: 1, schema: 1, kind: 'created' as const, data: { name: `p${i}`, price: 10 + i, currency: 'USD' } },
  before: null,
  after: { id: String(i + 1), version: 1, name: `p${i}`, price: 10 + i, currency: 'USD' },
}));
const row = { id: '1', version: 3, title: 'a', meta: { tags: ['x', 'y'], source: { app: 'crm', ref: 12 }, n: 1 } };

const cpuNs = (f: () => void) => {
  const t = process.cpuUsage();
  f();
  const u = process.cpuUsage(t);
  return ((u.user + u.system) * 1000) / N;
};
const loads = {
  evolve: (side: Side) => cpuNs(() => {
    let state: unknown = { USD: 0, EUR: 0 };
    for (let i = 0; i < N; i++) state = sides[side].view.evolve(state, changes[i % 1000]);
  }),
  decideOpaque: (side: Side) => cpuNs(() => {
    const { notes, retitle } = sides[side];
    for (let i = 0; i < N; i++) code[side].decider.decide(notes, '1', row, { _tag: 'Invoke', method: retitle, params: { title: `b${i & 7}` } }, undefined);
  }),
};
const median = (a: Array<number>) => [...a].sort((x, y) => x - y)[a.length >> 1];
for (const [name, run] of Object.entries(loads)) {
  const ns: Record<Side, Array<number>> = { old: [], new: [] };
  for (let r = 0; r < R; r++) for (const side of (r % 2 ? ['new', 'old'] : ['old', 'new']) as Array<Side>) ns[side].push(run(side));
  const [o, n] = [median(ns.old), median(ns.new)];
  console.log(`${name.padEnd(12)} old ${o.toFixed(0)} ns/call, new ${n.toFixed(0)} ns/call: +${(n - o).toFixed(0)} ns, new/old ${(n / o).toFixed(2)}`);
}
