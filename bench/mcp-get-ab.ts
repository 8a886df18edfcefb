// Old against new on the MCP read path (MCP products_get against REST GET), in one run: `wo run
// examples/pricing` from this checkout and from another one (OLD_ROOT, e.g. `git worktree add --detach /tmp/wo-old
// main`, with its node_modules linked to this one's). Each server is warmed, then REST GET, MCP get (modern) and
// MCP get (legacy, one session) are measured in alternating windows (ROUNDS, default 3, of WIN ms, default 3000)
// at C in flight (default 64). Prints server CPU per call, p99, and the MCP/REST and new/old ratios.
// CLIENT_AB=1 adds `built`: the modern call with its request built anew by the testkit each time (as the harness
// did before bench/lib/wo.ts's mcpCall kept its fixed parts), to show what the generator's own work costs the p99.
//   OLD_ROOT=/tmp/wo-old node --import tsx bench/mcp-get-ab.ts
import { openLegacySession, toolCallSucceeded } from '../testkit/mcp.ts';
import { combine, measure, type Load, type Measured } from './lib/measure.ts';
import { warmUntilStable } from './lib/warmup.ts';
import { isRow, mcpCall, mcpCallBuilt, restGet, seedProducts, startWo, type SpawnedServer } from './lib/wo.ts';
import { oldVsNew } from './lib/old-vs-new.ts';
import { loadavg } from 'node:os';

const { oldWo, dir, ROUNDS, WIN, C } = await oldVsNew('mcp-get-ab', { rounds: 3, inFlight: 64 });

type Version = 'old' | 'new';
type Kind = 'rest' | 'modern' | 'legacy' | 'built';
const KINDS: ReadonlyArray<Kind> = process.env.CLIENT_AB === '1' ? ['rest', 'modern', 'legacy', 'built'] : ['rest', 'modern', 'legacy'];

const servers: Record<Version, SpawnedServer> = {
  old: await oldWo.startWo({ dir: dir('old') }),
  new: await startWo({ dir: dir('new') }),
};
try {
  const loads = {} as Record<Version, Record<Kind, Load>>;
  for (const v of ['old', 'new'] as const) {
    const url = servers[v].url;
    await seedProducts(url, C);
    const session = await openLegacySession(url);
    loads[v] = {
      rest: { url, concurrency: C, makeRequest: (_i, w) => restGet(w + 1), check: (status, body) => isRow(status, body, 200) },
      modern: { url, concurrency: C, makeRequest: (i, w) => mcpCall('modern', i + 1, 'products_get', { id: String(w + 1) }), check: toolCallSucceeded },
      legacy: { url, concurrency: C, makeRequest: (i, w) => mcpCall(session, i + 1, 'products_get', { id: String(w + 1) }), check: toolCallSucceeded },
      built: { url, concurrency: C, makeRequest: (i, w) => mcpCallBuilt('modern', i + 1, 'products_get', { id: String(w + 1) }), check: toolCallSucceeded },
    };
    for (const k of KINDS) await warmUntilStable({ load: loads[v][k], pid: servers[v].pid, maxMs: 6000 });
  }
  const windows = { old: { rest: [], modern: [], legacy: [], built: [] }, new: { rest: [], modern: [], legacy: [], built: [] } } as Record<Version, Record<Kind, Array<Measured>>>;
  for (let r = 0; r < ROUNDS; r++) {
    const order: ReadonlyArray<Version> = r % 2 ? ['new', 'old'] : ['old', 'new'];
    // The kinds' order turns each round too: on shared cores a neighbour's burst lands in whichever slot it lands in,
    // and a kind always measured in the same slot would carry it into its p99.
    const kinds = KINDS.map((_, j) => KINDS[(j + r) % KINDS.length]);
    for (const k of kinds) for (const v of order) windows[v][k].push(await measure(servers[v], loads[v][k], WIN));
  }
  const m = {} as Record<Version, Record<Kind, Measured>>;
  for (const v of ['old', 'new'] as const) {
    m[v] = {} as Record<Kind, Measured>;
    for (const k of KINDS) m[v][k] = combine(windows[v][k]);
    for (const k of KINDS) {
      const x = m[v][k];
      console.log(`${v} ${k.padEnd(6)} server CPU ${(x.srvCpuMsPerCall * 1000).toFixed(1)} µs/call, p99 ${x.load.p99Ms.toFixed(2)} ms, ` +
        `p50 ${x.load.p50Ms.toFixed(2)} ms, generator CPU ${(x.genCpuMsPerCall * 1000).toFixed(1)} µs/call, ${x.load.callsPerSec.toFixed(0)}/s, other cores ${x.otherCores.toFixed(2)}, errors ${x.load.errors}`);
    }
  }
  const cpu = (a: Measured, b: Measured) => (a.srvCpuMsPerCall / b.srvCpuMsPerCall).toFixed(3);
  for (const v of ['old', 'new'] as const) {
    console.log(`${v}: MCP/REST CPU modern ${cpu(m[v].modern, m[v].rest)}x, legacy ${cpu(m[v].legacy, m[v].rest)}x; ` +
      `p99 − REST p99 modern ${(m[v].modern.load.p99Ms - m[v].rest.load.p99Ms).toFixed(2)} ms, legacy ${(m[v].legacy.load.p99Ms - m[v].rest.load.p99Ms).toFixed(2)} ms`);
  }
  if (KINDS.includes('built')) {
    for (const v of ['old', 'new'] as const) {
      console.log(`${v}: p99 − REST p99 with requests built per call ${(m[v].built.load.p99Ms - m[v].rest.load.p99Ms).toFixed(2)} ms, kept (mcpCall) ` +
        `${(m[v].modern.load.p99Ms - m[v].rest.load.p99Ms).toFixed(2)} ms; generator CPU built/kept ${(m[v].built.genCpuMsPerCall / m[v].modern.genCpuMsPerCall).toFixed(3)}x`);
    }
  }
  console.log(`new/old CPU/call: rest ${cpu(m.new.rest, m.old.rest)}, modern ${cpu(m.new.modern, m.old.modern)}, legacy ${cpu(m.new.legacy, m.old.legacy)}`);
  console.log(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
} finally {
  for (const s of Object.values(servers)) await s.stop();
}
