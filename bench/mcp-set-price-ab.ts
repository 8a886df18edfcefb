// Old against new on the MCP write path (MCP set_price, SDK v2 / ours), in one run: `wo run
// examples/pricing` from this checkout and from another one (OLD_ROOT), and the SDK v2 peer (in-memory set_price,
// dual-era, legacy sessions), as the load matrix's set_price rows are made (each caller on its own product). Each
// is warmed, then measured in alternating windows (ROUNDS, default 3, of WIN ms, default 3000) at C in flight
// (default 64), modern and on a legacy session. Prints server CPU per call and the SDK/ours and new/old ratios.
//   OLD_ROOT=/tmp/wo-old node --import tsx bench/mcp-set-price-ab.ts
import { closeLegacySession, legacyToolCall, modernToolCall, openLegacySession, toolCallSucceeded, type LegacySession } from '../testkit/mcp.ts';
import { combine, measure, type Load, type Measured } from './lib/measure.ts';
import { warmUntilStable } from './lib/warmup.ts';
import { mcpCall, seedProducts, spawnPeer, startWo, type SpawnedServer } from './lib/wo.ts';
import { oldVsNew } from './lib/old-vs-new.ts';
import { loadavg } from 'node:os';

const { oldWo, dir, ROUNDS, WIN, C } = await oldVsNew('mcp-set-price-ab', { rounds: 3, inFlight: 64 });

type Server = 'old' | 'new' | 'sdk';
type Wire = 'modern' | 'legacy';
const SERVERS: ReadonlyArray<Server> = ['old', 'new', 'sdk'];
const WIRES: ReadonlyArray<Wire> = ['modern', 'legacy'];
const priceOf = (i: number) => 1 + (i % 1000);

const servers: Record<Server, SpawnedServer> = {
  old: await oldWo.startWo({ dir: dir('old') }),
  new: await startWo({ dir: dir('new') }),
  sdk: await spawnPeer('bench/peers/sdk-v2-server.ts'),
};
const sessions: Array<LegacySession> = [];
try {
  const loads = {} as Record<Server, Record<Wire, Load>>;
  for (const s of SERVERS) {
    const url = servers[s].url;
    const session = await openLegacySession(url);
    sessions.push(session);
    if (s === 'sdk') {
      loads[s] = {
        modern: { url, concurrency: C, makeRequest: (i, w) => modernToolCall({ id: i + 1, name: 'set_price', arguments: { id: `p${w}`, price: priceOf(i) } }), check: toolCallSucceeded },
        legacy: { url, concurrency: C, makeRequest: (i, w) => legacyToolCall(session, { id: i + 1, name: 'set_price', arguments: { id: `p${w}`, price: priceOf(i) } }), check: toolCallSucceeded },
      };
    } else {
      await seedProducts(url, C);
      loads[s] = {
        modern: { url, concurrency: C, makeRequest: (i, w) => mcpCall('modern', i + 1, 'products_set_price', { id: String(w + 1), price: priceOf(i) }), check: toolCallSucceeded },
        legacy: { url, concurrency: C, makeRequest: (i, w) => mcpCall(session, i + 1, 'products_set_price', { id: String(w + 1), price: priceOf(i) }), check: toolCallSucceeded },
      };
    }
    for (const k of WIRES) await warmUntilStable({ load: { ...loads[s][k], concurrency: 16 }, pid: servers[s].pid, maxMs: 8000 });
  }
  const windows = {} as Record<Server, Record<Wire, Array<Measured>>>;
  for (const s of SERVERS) windows[s] = { modern: [], legacy: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const order: ReadonlyArray<Server> = r % 2 ? ['sdk', 'new', 'old'] : ['old', 'new', 'sdk'];
    for (const k of WIRES) for (const s of order) windows[s][k].push(await measure(servers[s], loads[s][k], WIN));
  }
  const m = {} as Record<Server, Record<Wire, Measured>>;
  for (const s of SERVERS) {
    m[s] = { modern: combine(windows[s].modern), legacy: combine(windows[s].legacy) };
    for (const k of WIRES) {
      const x = m[s][k];
      console.log(`${s} ${k.padEnd(6)} server CPU ${(x.srvCpuMsPerCall * 1000).toFixed(1)} µs/call, p99 ${x.load.p99Ms.toFixed(2)} ms, ` +
        `${x.load.callsPerSec.toFixed(0)}/s, other cores ${x.otherCores.toFixed(2)}, errors ${x.load.errors}`);
    }
  }
  const cpu = (a: Measured, b: Measured) => (a.srvCpuMsPerCall / b.srvCpuMsPerCall).toFixed(3);
  for (const v of ['old', 'new'] as const) {
    console.log(`${v}: SDK v2 / ours CPU modern ${cpu(m.sdk.modern, m[v].modern)}x, legacy ${cpu(m.sdk.legacy, m[v].legacy)}x`);
  }
  console.log(`new/old CPU/call: modern ${cpu(m.new.modern, m.old.modern)}, legacy ${cpu(m.new.legacy, m.old.legacy)}`);
  console.log(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
} finally {
  for (const s of sessions) await closeLegacySession(s).catch(() => {});
  for (const s of Object.values(servers)) await s.stop();
}
