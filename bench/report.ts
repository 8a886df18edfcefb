// The `npm run bench` report: budgets (architecture.md, "Performance budgets") evaluated from one run's
// figures, the ratios without a budget, the Markdown (bench/results/latest.md) and the chart spec
// (bench/results/latest.svg). Pure functions of the raw JSON (bench/results/latest.json).
import type { BarRow, BarSection, ChartSpec, Panel, RatioRow } from './lib/svg-chart.ts';
import { renderChart } from './lib/svg-chart.ts';
import type { LevelResult, ScenarioResult } from './scenarios/load-matrix.ts';
import type { NotifyResult } from './scenarios/notify.ts';
import type { ReadersResult } from './scenarios/readers.ts';
import type { AmplifyResult } from './scenarios/amplify.ts';
import type { ReplayResult } from './scenarios/replay.ts';
import type { SessionsResult } from './scenarios/sessions.ts';
import { cqrsRatios, type CqrsResult } from './scenarios/cqrs.ts';
import type { StallPhase } from './scenarios/stall.ts';
import type { Mode } from './scenarios/context.ts';

export type Verdict = 'PASS' | 'MISS' | 'n/a';

export interface Budget {
  id: string;
  name: string;
  want: string;
  value: number;
  unit: string;
  result: Verdict;
  /** what was compared, at which load */
  detail: string;
}

export interface RunReport {
  bench: 'run';
  mode: Mode;
  at: string;
  node: string;
  commit: string;
  cores: number;
  cpuModel: string;
  loadavg: { before: number[]; after: number[] };
  busyCoresAtStart: number;
  dataDir: string;
  durations: Record<string, unknown>;
  wallMs: number;
  fsync: { dir: string; beforePerSec: number; afterPerSec: number; meanPerSec: number } | null;
  serverStartMs: Record<string, number>;
  load: ScenarioResult[];
  notify: NotifyResult | null;
  /** the same scenario against the plain node:http fan-out peer: the floor on this machine */
  notifyFloor: NotifyResult | null;
  /** the same scenario with legacy sessions' GET streams, ours and the floor's */
  notifyLegacy?: NotifyResult | null;
  notifyFloorLegacy?: NotifyResult | null;
  /** writes with unread streams open, GETs while event-log readers catch up */
  readers?: ReadersResult | null;
  /** GETs while bad bodies are answered */
  amplify?: AmplifyResult | null;
  stall: StallPhase[] | null;
  replay: ReplayResult | null;
  sessions: SessionsResult | null;
  /** filtered lists and live queries */
  cqrs: CqrsResult | null;
  ratios: Record<string, number>;
  budgets: Budget[];
  warnings: string[];
}

/** The keys every latest.json has (the smoke test checks them). */
export const REPORT_KEYS = [
  'bench', 'mode', 'at', 'node', 'commit', 'cores', 'loadavg', 'busyCoresAtStart', 'fsync', 'load', 'notify', 'notifyFloor', 'stall',
  'replay', 'sessions', 'cqrs', 'ratios', 'budgets', 'warnings',
] as const;

export const BUDGET = {
  sdkCpu: 5,
  sdkRate: 2,
  /** ours / the durable-write floor (bench/peers/durable-floor.ts): CPU per write at most, writes/s at least */
  writeFloorCpu: 1.5,
  writeFloorRate: 0.67,
  getP99DeltaMs: 1,
  notifyP99Ms: 5,
  edgeCpu: 1.3,
  mcpGetCpuOverRest: 1.25,
  restartMs: 2000,
  /** `wo run` spawn to ready on an empty dir */
  spawnToReadyMs: 1000,
  verifyEventsPerSec: 200_000,
  /** ours / the fan-out floor at 1,000 streams (p99, CPU per notification, RSS per stream) */
  streamsOverFloor: 1.5,
  /** server RSS after every stream closed / before they opened */
  rssAfterClose: 1.1,
  /** set_price p99 with unread streams / without; GET p99 while readers catch up / idle */
  readersP99: 2,
  /** GET p99 while four 3 MB bad bodies are answered / idle */
  badBodiesP99: 2,
} as const;

/** The notification figures of one run at `n` streams, ours over the floor's (NaN when either is missing). */
export function streamRatios(ours: NotifyResult | null | undefined, floor: NotifyResult | null | undefined, n = 1000) {
  const lat = (r: NotifyResult | null | undefined) => r?.latency.find((l) => l.subscribers === n)?.p99Ms ?? Number.NaN;
  const cpu = (r: NotifyResult | null | undefined) => r?.fanout.find((o) => o.subscribers === n)?.srvCpuUsPerNotification ?? Number.NaN;
  const rss = (r: NotifyResult | null | undefined, gc = false) => {
    const readings = gc ? r?.rssGc : r?.rss;
    const base = readings?.find((x) => x.subscribers === 0);
    const top = readings?.find((x) => x.subscribers === n);
    return base && top ? ((top.rssMb - base.rssMb) * 1024) / n : Number.NaN;
  };
  // The same after a forced full GC, printed beside (what the streams retain, without uncollected garbage).
  const gcNote = () => {
    const [o, f] = [rss(ours, true), rss(floor, true)];
    return Number.isFinite(o) && Number.isFinite(f) ? `; after a forced GC ours ${o.toFixed(2)}, floor ${f.toFixed(2)} KiB/stream (${(o / f).toFixed(2)}x)` : '';
  };
  return {
    p99: lat(ours) / lat(floor),
    cpu: cpu(ours) / cpu(floor),
    rssPerStream: rss(ours) / rss(floor),
    afterClose: ours?.rssAfterClose ? ours.rssAfterClose.afterMb / ours.rssAfterClose.beforeMb : Number.NaN,
    detail: (what: 'p99' | 'cpu' | 'rss') => {
      const [o, f, unit] = what === 'p99' ? [lat(ours), lat(floor), 'ms'] : what === 'cpu' ? [cpu(ours), cpu(floor), 'µs/notification'] : [rss(ours), rss(floor), 'KiB/stream'];
      return Number.isFinite(o) && Number.isFinite(f) ? `${n.toLocaleString('en-US')} streams: ours ${o.toFixed(what === 'cpu' ? 1 : 2)} ${unit}, floor ${f.toFixed(what === 'cpu' ? 1 : 2)} ${unit}${what === 'rss' ? gcNote() : ''}` : 'not measured in this run';
    },
  };
}
/** The load at which each budget is judged; smoke runs use the one level they measure. */
export const BUDGET_LEVEL = { sdk: 64, creates: 32, get: 16, edge: 16 } as const;

function levelAt(load: ScenarioResult[], id: string, c: number): LevelResult | undefined {
  const s = load.find((x) => x.id === id);
  if (!s || s.levels.length === 0) return undefined;
  return s.levels.find((l) => l.concurrency === c) ?? s.levels[s.levels.length - 1];
}

const verdict = (ok: boolean | undefined): Verdict => (ok === undefined ? 'n/a' : ok ? 'PASS' : 'MISS');
const fin = (v: number | undefined): v is number => v !== undefined && Number.isFinite(v);

/** The ratios of the run, budgeted or not (keys are stable; NaN when a side was not measured). */
export function computeRatios(r: Pick<RunReport, 'load' | 'fsync' | 'notify'> & { cqrs?: CqrsResult | null }): Record<string, number> {
  const L = (id: string, c: number) => levelAt(r.load, id, c);
  const cpu = (a?: LevelResult, b?: LevelResult) => (a && b ? a.srvCpuUsPerCall / b.srvCpuUsPerCall : Number.NaN);
  const rate = (a?: LevelResult, b?: LevelResult) => (a && b ? a.callsPerSec / b.callsPerSec : Number.NaN);
  const c = BUDGET_LEVEL.sdk;
  const out: Record<string, number> = {
    sdkV2CpuOverOursModern: cpu(L('sdk-v2.set_price.modern', c), L('wo.mcp.set_price.modern.on', c)),
    oursRateOverSdkV2Modern: rate(L('wo.mcp.set_price.modern.on', c), L('sdk-v2.set_price.modern', c)),
    sdkV2CpuOverOursLegacy: cpu(L('sdk-v2.set_price.legacy', c), L('wo.mcp.set_price.legacy.on', c)),
    oursRateOverSdkV2Legacy: rate(L('wo.mcp.set_price.legacy.on', c), L('sdk-v2.set_price.legacy', c)),
    sdkV2CpuOverOursModernHotRow: cpu(L('sdk-v2.set_price.modern', c), L('wo.mcp.set_price.modern.hot', c)),
    oursRateOverSdkV2ModernHotRow: rate(L('wo.mcp.set_price.modern.hot', c), L('sdk-v2.set_price.modern', c)),
    sdkV2CpuOverOursLegacyHotRow: cpu(L('sdk-v2.set_price.legacy', c), L('wo.mcp.set_price.legacy.hot', c)),
    oursRateOverSdkV2LegacyHotRow: rate(L('wo.mcp.set_price.legacy.hot', c), L('sdk-v2.set_price.legacy', c)),
    sdkV1CpuOverOursLegacy: cpu(L('sdk-v1.set_price.legacy', c), L('wo.mcp.set_price.legacy.on', c)),
    oursRateOverSdkV1Legacy: rate(L('wo.mcp.set_price.legacy.on', c), L('sdk-v1.set_price.legacy', c)),
    setPriceModernGcOnOverOffRate: rate(L('wo.mcp.set_price.modern.on', c), L('wo.mcp.set_price.modern.off', c)),
    setPriceLegacyGcOnOverOffRate: rate(L('wo.mcp.set_price.legacy.on', c), L('wo.mcp.set_price.legacy.off', c)),
    createsOverFsync: r.fsync ? (L('wo.rest.create.on', BUDGET_LEVEL.creates)?.callsPerSec ?? Number.NaN) / r.fsync.meanPerSec : Number.NaN,
    createsGcOnOverOff: rate(L('wo.rest.create.on', BUDGET_LEVEL.creates), L('wo.rest.create.off', BUDGET_LEVEL.creates)),
    createCpuOverFloor: cpu(L('wo.rest.create.on', BUDGET_LEVEL.creates), L('floor.rest.create', BUDGET_LEVEL.creates)),
    createRateOverFloor: rate(L('wo.rest.create.on', BUDGET_LEVEL.creates), L('floor.rest.create', BUDGET_LEVEL.creates)),
    setPriceCpuOverFloor: cpu(L('wo.rest.set_price.on', BUDGET_LEVEL.creates), L('floor.rest.set_price', BUDGET_LEVEL.creates)),
    setPriceRateOverFloor: rate(L('wo.rest.set_price.on', BUDGET_LEVEL.creates), L('floor.rest.set_price', BUDGET_LEVEL.creates)),
    mcpGetModernMinusRestP99Ms: (L('wo.mcp.get.modern', BUDGET_LEVEL.get)?.p99Ms ?? Number.NaN) - (L('wo.rest.get', BUDGET_LEVEL.get)?.p99Ms ?? Number.NaN),
    mcpGetLegacyMinusRestP99Ms: (L('wo.mcp.get.legacy', BUDGET_LEVEL.get)?.p99Ms ?? Number.NaN) - (L('wo.rest.get', BUDGET_LEVEL.get)?.p99Ms ?? Number.NaN),
    restGetCpuOverPlain: cpu(L('wo.rest.get', BUDGET_LEVEL.edge), L('plain.echo', BUDGET_LEVEL.edge)),
    mcpGetModernCpuOverLegacy: cpu(L('wo.mcp.get.modern', BUDGET_LEVEL.get), L('wo.mcp.get.legacy', BUDGET_LEVEL.get)),
    mcpGetModernMinusLegacyCpuUs:
      (L('wo.mcp.get.modern', BUDGET_LEVEL.get)?.srvCpuUsPerCall ?? Number.NaN) - (L('wo.mcp.get.legacy', BUDGET_LEVEL.get)?.srvCpuUsPerCall ?? Number.NaN),
    mcpGetModernCpuOverRest: cpu(L('wo.mcp.get.modern', BUDGET_LEVEL.get), L('wo.rest.get', BUDGET_LEVEL.get)),
  };
  const n1000 = r.notify?.latency.find((l) => l.subscribers === 1000);
  out.notifyP99Ms1000 = n1000?.p99Ms ?? Number.NaN;
  Object.assign(out, cqrsRatios(r.cqrs));
  return out;
}

/** One budget's row: PASS or MISS against `threshold`, n/a when the value was not measured (NaN). */
export const budget = (id: string, name: string, want: '>=' | '<=', threshold: number, value: number, unit: string, detail: string): Budget => ({
  id,
  name,
  want: `${want} ${threshold}${unit}`,
  value,
  unit,
  result: verdict(fin(value) ? (want === '>=' ? value >= threshold : value <= threshold) : undefined),
  detail: fin(value) ? detail : 'not measured in this run',
});

/** The readers scenario's floors (bench/peers/notify-floor.ts, catch-up-floor.ts), same run: their own ratio, and ours over it. */
const unreadFloorDetail = (rd: ReadersResult) => {
  const f = rd.floor;
  if (f === undefined) return '';
  const ratio = f.setPriceP99MsWith / f.setPriceP99MsWithout;
  return `; the floor (bench/peers/notify-floor.ts) ${f.setPriceP99MsWith.toFixed(2)} ms (${f.setPricesPerSecWith.toFixed(0)}/s) against ${f.setPriceP99MsWithout.toFixed(2)} ms ` +
    `(${f.setPricesPerSecWithout.toFixed(0)}/s): ${ratio.toFixed(2)}x (ours/floor ${(rd.setPriceP99MsWith / rd.setPriceP99MsWithout / ratio).toFixed(2)})`;
};
const catchUpFloorDetail = (rd: ReadersResult) => {
  const f = rd.floor;
  if (f === undefined) return '';
  const ratio = f.getP99MsWhileCatchingUp / f.getP99MsIdle;
  return `; the floor (bench/peers/catch-up-floor.ts) ${f.getP99MsWhileCatchingUp.toFixed(2)} ms against ${f.getP99MsIdle.toFixed(2)} ms idle: ${ratio.toFixed(2)}x ` +
    `(ours/floor ${(rd.getP99MsWhileCatchingUp / rd.getP99MsIdle / ratio).toFixed(2)})${f.caughtUp ? '' : ', NOT every reader caught up'}`;
};

/** The bad-bodies floor (bench/peers/bad-body-floor.ts: node:http that JSON.parses the body whole), same run. */
const amplifyFloorDetail = (am: AmplifyResult): string => {
  const f = am.floor;
  if (f === undefined) return '';
  const ratio = f.getP99MsWithBadBodies / f.getP99MsIdle;
  const ours = am.getP99MsWithBadBodies / am.getP99MsIdle;
  return `. Floor (plain node:http, JSON.parse of the whole body): p99 ${f.getP99MsWithBadBodies.toFixed(2)} ms against ${f.getP99MsIdle.toFixed(2)} ms idle = ${ratio.toFixed(2)}x ` +
    `(ours/floor ${(ours / ratio).toFixed(2)}), ${f.badBodyMsMean.toFixed(0)} ms per bad body` +
    (f.serverCpuMsPerBadBody !== undefined && am.serverCpuMsPerBadBody !== undefined ? `, server CPU ${f.serverCpuMsPerBadBody.toFixed(1)} ms (ours/floor ${(am.serverCpuMsPerBadBody / f.serverCpuMsPerBadBody).toFixed(2)})` : '');
};

export function evaluateBudgets(r: Pick<RunReport, 'load' | 'fsync' | 'notify' | 'notifyFloor' | 'replay'> & Partial<Pick<RunReport, 'notifyLegacy' | 'notifyFloorLegacy' | 'readers' | 'amplify'>>, ratios: Record<string, number>): Budget[] {
  const L = (id: string, c: number) => levelAt(r.load, id, c);
  const at = (id: string, c: number) => L(id, c)?.concurrency ?? c;
  const c = BUDGET_LEVEL.sdk;
  const b = budget;
  // What the ratio would be for a server that spent only the durable-write floor's CPU on a set_price (REST, no
  // JSON-RPC): the bound the budget meets even at the floor.
  const floorBound = (sdkUs: number) => {
    const floor = L('floor.rest.set_price', c);
    return floor ? `; the durable-write floor's REST set_price ${floor.srvCpuUsPerCall.toFixed(0)} µs/call: SDK v2 / floor ${(sdkUs / floor.srvCpuUsPerCall).toFixed(2)}x` : '';
  };
  const sdkDetail = (era: string, ours: string, peer: string) => {
    const o = L(ours, c);
    const p = L(peer, c);
    return o && p
      ? `${era}, ${at(ours, c)} in flight, each caller on its own product: ours ${o.srvCpuUsPerCall.toFixed(0)} µs/call, ${o.callsPerSec.toFixed(0)} calls/s (durable); ` +
        `SDK v2 ${p.srvCpuUsPerCall.toFixed(0)} µs/call, ${p.callsPerSec.toFixed(0)} calls/s (in memory)` + floorBound(p.srvCpuUsPerCall)
      : 'not measured in this run';
  };
  const create = L('wo.rest.create.on', BUDGET_LEVEL.creates);
  const get = L('wo.rest.get', BUDGET_LEVEL.get);
  const mget = L('wo.mcp.get.modern', BUDGET_LEVEL.get);
  const lget = L('wo.mcp.get.legacy', BUDGET_LEVEL.get);
  const plain = L('plain.echo', BUDGET_LEVEL.edge);
  const n1000 = r.notify?.latency.find((l) => l.subscribers === 1000);
  const floor1000 = r.notifyFloor?.latency.find((l) => l.subscribers === 1000);
  const modern = streamRatios(r.notify, r.notifyFloor);
  const legacy = streamRatios(r.notifyLegacy, r.notifyFloorLegacy);
  const rd = r.readers;
  const am = r.amplify;
  const streams = (id: string, name: string, value: number, detail: string) => b(id, name, '<=', BUDGET.streamsOverFloor, value, 'x', detail);
  // Beside the plain figure, the same after a forced full GC, and the floor's (same streams, same wait).
  const gcClose = (c: NonNullable<NotifyResult['rssAfterClose']>) =>
    c.afterGcMb !== undefined && c.beforeGcMb !== undefined ? `; after a forced GC ${c.beforeGcMb.toFixed(0)} / ${c.afterGcMb.toFixed(0)} MB (${(c.afterGcMb / c.beforeGcMb).toFixed(2)}x)` : '';
  const floorClose = r.notifyFloor?.rssAfterClose;
  const closeDetail = (run: NotifyResult | null | undefined) =>
    run?.rssAfterClose ? `${run.rssAfterClose.beforeMb.toFixed(0)} MB before the streams opened, ${run.rssAfterClose.afterMb.toFixed(0)} MB ${(run.rssAfterClose.settleMs / 1000).toFixed(0)} s after they all closed${gcClose(run.rssAfterClose)}` +
      (floorClose ? `; the floor ${floorClose.beforeMb.toFixed(0)} / ${floorClose.afterMb.toFixed(0)} MB (${(floorClose.afterMb / floorClose.beforeMb).toFixed(2)}x)${gcClose(floorClose)}` : '') : 'not measured in this run';
  const issue13 = [
    streams('notifyP99OverFloorModern', 'commit-to-notification p99 / floor, 1,000 listen streams', modern.p99, modern.detail('p99')),
    streams('notifyP99OverFloorLegacy', 'commit-to-notification p99 / floor, 1,000 legacy GET streams', legacy.p99, legacy.detail('p99')),
    streams('notifyCpuOverFloorModern', 'server CPU per notification / floor, 1,000 listen streams', modern.cpu, modern.detail('cpu')),
    streams('notifyCpuOverFloorLegacy', 'server CPU per notification / floor, 1,000 legacy GET streams', legacy.cpu, legacy.detail('cpu')),
    streams('streamRssOverFloorModern', 'RSS per open stream / floor, listen streams', modern.rssPerStream, modern.detail('rss')),
    streams('streamRssOverFloorLegacy', 'RSS per open stream / floor, legacy GET streams', legacy.rssPerStream, legacy.detail('rss')),
    b('rssAfterClose', 'server RSS after 1,000 listen streams closed / before they opened', '<=', BUDGET.rssAfterClose, modern.afterClose, 'x', closeDetail(r.notify)),
    b('writesWithUnreadStreams', 'set_price p99 with unread listen streams open / without', '<=', BUDGET.readersP99,
      rd ? rd.setPriceP99MsWith / rd.setPriceP99MsWithout : Number.NaN, 'x',
      rd ? `${rd.streams.toLocaleString('en-US')} unread streams x ${rd.subscriptions} subscriptions: p99 ${rd.setPriceP99MsWith.toFixed(2)} ms (${rd.setPricesPerSecWith.toFixed(0)}/s) against ${rd.setPriceP99MsWithout.toFixed(2)} ms (${rd.setPricesPerSecWithout.toFixed(0)}/s)` + unreadFloorDetail(rd) : 'not measured in this run'),
    b('getWhileCatchingUp', 'GET p99 while readers catch up on /api/_events / idle', '<=', BUDGET.readersP99,
      rd ? rd.getP99MsWhileCatchingUp / rd.getP99MsIdle : Number.NaN, 'x',
      rd ? `${rd.readers} readers over ${rd.events.toLocaleString('en-US')} events: p99 ${rd.getP99MsWhileCatchingUp.toFixed(2)} ms over ${rd.getsWhileCatchingUp} GETs against ${rd.getP99MsIdle.toFixed(2)} ms idle; ${rd.caughtUp ? 'every reader caught up' : 'NOT every reader caught up'}` + catchUpFloorDetail(rd) : 'not measured in this run'),
  ];
  const issue20 = [
    b('getWhileBadBodies', 'GET p99 while 3 MB bad bodies are answered / idle', '<=', BUDGET.badBodiesP99,
      am ? am.getP99MsWithBadBodies / am.getP99MsIdle : Number.NaN, 'x',
      am ? `${am.senders} clients sending ${(am.badBodyBytes / 1e6).toFixed(1)} MB bodies of unknown keys back to back (${am.badBodiesAnswered} answered${am.badBodyResets ? `, ${am.badBodyResets} connections reset` : ''}, ` +
        `${am.badBodyMsMean.toFixed(0)} ms each, largest 400 ${am.errorBodyBytesMax.toLocaleString('en-US')} bytes): p99 ${am.getP99MsWithBadBodies.toFixed(2)} ms over ` +
        `${am.getsWithBadBodies} GETs${am.getResets ? ` (${am.getResets} retried after a reset)` : ''} against ${am.getP99MsIdle.toFixed(2)} ms idle` +
        (am.serverCpuMsPerBadBody !== undefined ? `; server CPU ${am.serverCpuMsPerBadBody.toFixed(1)} ms per bad body` : '') + amplifyFloorDetail(am) : 'not measured in this run'),
  ];
  return [
    ...issue13,
    ...issue20,
    b('sdkCpuModern', 'MCP set_price server CPU/call: SDK v2 / ours, modern', '>=', BUDGET.sdkCpu, ratios.sdkV2CpuOverOursModern, 'x',
      sdkDetail('modern (2026-07-28)', 'wo.mcp.set_price.modern.on', 'sdk-v2.set_price.modern')),
    b('sdkRateModern', 'MCP set_price calls/s: ours / SDK v2, modern', '>=', BUDGET.sdkRate, ratios.oursRateOverSdkV2Modern, 'x',
      sdkDetail('modern (2026-07-28)', 'wo.mcp.set_price.modern.on', 'sdk-v2.set_price.modern')),
    b('sdkCpuLegacy', 'MCP set_price server CPU/call: SDK v2 / ours, legacy', '>=', BUDGET.sdkCpu, ratios.sdkV2CpuOverOursLegacy, 'x',
      sdkDetail('legacy (2025-11-25 sessions)', 'wo.mcp.set_price.legacy.on', 'sdk-v2.set_price.legacy')),
    b('sdkRateLegacy', 'MCP set_price calls/s: ours / SDK v2, legacy', '>=', BUDGET.sdkRate, ratios.oursRateOverSdkV2Legacy, 'x',
      sdkDetail('legacy (2025-11-25 sessions)', 'wo.mcp.set_price.legacy.on', 'sdk-v2.set_price.legacy')),
    ...(['create', 'set_price'] as const).flatMap((op) => {
      const ours = L(`wo.rest.${op}.on`, BUDGET_LEVEL.creates);
      const floor = L(`floor.rest.${op}`, BUDGET_LEVEL.creates);
      const detail = ours && floor
        ? `${at(`wo.rest.${op}.on`, BUDGET_LEVEL.creates)} in flight: ours ${ours.srvCpuUsPerCall.toFixed(0)} µs/call, ${ours.callsPerSec.toFixed(0)}/s (server ${ours.srvCores.toFixed(2)} cores); ` +
          `floor ${floor.srvCpuUsPerCall.toFixed(0)} µs/call, ${floor.callsPerSec.toFixed(0)}/s (${floor.srvCores.toFixed(2)} cores)`
        : 'not measured in this run';
      const key = op === 'create' ? 'create' : 'setPrice';
      return [
        b(`${key}CpuOverFloor`, `durable REST ${op} server CPU/call: ours / the durable-write floor`, '<=', BUDGET.writeFloorCpu, ratios[`${key}CpuOverFloor`], 'x', detail),
        b(`${key}RateOverFloor`, `durable REST ${op} calls/s: ours / the durable-write floor`, '>=', BUDGET.writeFloorRate, ratios[`${key}RateOverFloor`], 'x', detail),
      ];
    }),
    b('getP99Modern', 'MCP products_get p99 - REST GET p99, modern', '<=', BUDGET.getP99DeltaMs, ratios.mcpGetModernMinusRestP99Ms, ' ms',
      get && mget ? `${at('wo.rest.get', BUDGET_LEVEL.get)} in flight: MCP ${mget.p99Ms.toFixed(2)} ms, REST ${get.p99Ms.toFixed(2)} ms` : 'not measured in this run'),
    b('getP99Legacy', 'MCP products_get p99 - REST GET p99, legacy', '<=', BUDGET.getP99DeltaMs, ratios.mcpGetLegacyMinusRestP99Ms, ' ms',
      get && lget ? `${at('wo.rest.get', BUDGET_LEVEL.get)} in flight: MCP ${lget.p99Ms.toFixed(2)} ms, REST ${get.p99Ms.toFixed(2)} ms` : 'not measured in this run'),
    b('mcpGetCpu', 'MCP products_get server CPU/call / REST GET, modern', '<=', BUDGET.mcpGetCpuOverRest, ratios.mcpGetModernCpuOverRest, 'x',
      get && mget ? `${at('wo.rest.get', BUDGET_LEVEL.get)} in flight: MCP ${mget.srvCpuUsPerCall.toFixed(0)} µs/call, REST ${get.srvCpuUsPerCall.toFixed(0)} µs/call` : 'not measured in this run'),
    b('notifyP99', 'commit-to-notification p99, 1,000 subscribers on one resource', '<=', BUDGET.notifyP99Ms, ratios.notifyP99Ms1000, ' ms',
      n1000 ? `${n1000.samples} samples (${n1000.repeats} commits x 1,000 listen streams), from just before the set_price request; p50 ${n1000.p50Ms.toFixed(2)} ms` +
        (floor1000 ? `; the plain node:http floor: p50 ${floor1000.p50Ms.toFixed(2)} ms, p99 ${floor1000.p99Ms.toFixed(2)} ms` : '') : 'not measured in this run (1,000 subscribers)'),
    b('edgeCpu', 'edge server CPU/request: REST GET / plain node:http echo', '<=', BUDGET.edgeCpu, ratios.restGetCpuOverPlain, 'x',
      get && plain ? `${at('wo.rest.get', BUDGET_LEVEL.edge)} in flight: ${get.srvCpuUsPerCall.toFixed(0)} vs ${plain.srvCpuUsPerCall.toFixed(0)} µs/call` : 'not measured in this run'),
    b('restart', 'restart (`wo run` spawn to ready) on the replay log, checks included', '<=', BUDGET.restartMs, r.replay?.restartMs ?? Number.NaN, ' ms',
      r.replay ? `${r.replay.events.toLocaleString('en-US')} events; ${r.replay.emptyStartMs.toFixed(0)} ms on an empty dir` : 'not measured in this run'),
    b('spawnToReady', '`wo run` spawn to ready on an empty dir', '<=', BUDGET.spawnToReadyMs, r.replay?.emptyStartMs ?? Number.NaN, ' ms',
      r.replay ? `${r.replay.emptyStartNote ?? 'alone'}` : 'not measured in this run'),
    b('verifyRate', '`wo verify` events/s (checksums, sequence and version continuity)', '>=', BUDGET.verifyEventsPerSec, r.replay?.verifyEventsPerSec ?? Number.NaN, '',
      r.replay ? `${r.replay.verifyOk ? 'OK' : 'NOT OK'} on ${r.replay.events.toLocaleString('en-US')} events in ${r.replay.verifyMs} ms` : 'not measured in this run'),
  ];
}

// ---------------------------------------------------------------------------------------------------
// Markdown

const f = (v: number | undefined, digits = 2): string => {
  if (!fin(v)) return '-';
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString('en-US');
  if (Math.abs(v) >= 100) return v.toFixed(0);
  return v.toFixed(digits);
};
const x = (v: number | undefined) => (fin(v) ? `${v.toFixed(2)}x` : '-');
const mdRow = (cells: (string | number)[]) => `| ${cells.map((c) => String(c).replace(/\|/g, '\\|')).join(' | ')} |`;
const mdTable = (header: string[], rows: (string | number)[][], align?: ('l' | 'r')[]): string[] => [
  mdRow(header),
  `|${header.map((_, i) => ((align?.[i] ?? 'l') === 'r' ? '---:' : ':---')).join('|')}|`,
  ...rows.map(mdRow),
];

/** Budgets as a Markdown table: the run's own, and each scenario's section (its budgets again, beside its figures). */
export const budgetTable = (budgets: ReadonlyArray<Budget>): string[] =>
  mdTable(['budget', 'measured', 'want', 'verdict', 'how'], budgets.map((b) => [
    b.name, fin(b.value) ? `${b.value.toFixed(2)}${b.unit}` : '-', b.want, `**${b.result}**`, b.detail,
  ]));

export const LOAD_HEADER = ['scenario', 'in flight', 'calls/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'srv CPU µs/call', 'gen CPU µs/call', 'srv cores', 'other cores', 'srv RSS MB', 'errors'];

export function renderMarkdown(r: RunReport): string {
  const out: string[] = [];
  const modeFlag = r.mode === 'full' ? '' : ` -- --${r.mode}`;
  out.push(`# writeonce benchmarks: latest run (\`npm run bench${modeFlag}\`)`, '');
  out.push(
    `${r.at} · commit \`${r.commit}\` · node ${r.node} · ${r.cores} cores (${r.cpuModel}) · ` +
      `loadavg before ${r.loadavg.before.map((v) => v.toFixed(2)).join(' ')}, after ${r.loadavg.after.map((v) => v.toFixed(2)).join(' ')} · ` +
      `busy cores at start ${r.busyCoresAtStart.toFixed(2)} · wall ${(r.wallMs / 1000).toFixed(0)} s`,
    '',
  );
  if (r.mode !== 'full') {
    out.push(`> \`--${r.mode}\`: short windows and warm-ups (the SDK peers are not settled, which flatters our ratios against them), ` +
      'a subset of levels and sizes. The full run (`npm run bench`) is the reference.', '');
  }
  out.push('## Budgets (architecture.md, "Performance budgets")', '');
  out.push(...budgetTable(r.budgets));
  out.push('');

  out.push('## Request/response scenarios', '');
  out.push('Closed loop on undici (one keep-alive connection per caller). Server CPU per call from /proc (all threads); ' +
    'ours are durable (fsync before the answer) unless noted, the SDK peers keep prices in a Map. ' +
    '`other cores`: CPU used by anything but the server and the generator during the window (noise).', '');
  const rows: (string | number)[][] = [];
  for (const s of r.load) {
    for (const l of s.levels) {
      rows.push([s.label, l.concurrency, f(l.callsPerSec, 0), f(l.p50Ms), f(l.p99Ms), f(l.p999Ms), f(l.srvCpuUsPerCall, 0), f(l.genCpuUsPerCall, 0),
        f(l.srvCores), f(l.otherCores), f(l.srvRssMb, 0), l.errors]);
    }
  }
  out.push(...mdTable(LOAD_HEADER, rows, ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r']));
  out.push('');
  if (r.fsync) {
    out.push(`Raw fsync rate of the data disk (100 B append + fsync, ${r.fsync.dir}): before ${f(r.fsync.beforePerSec, 0)}/s, ` +
      `after ${f(r.fsync.afterPerSec, 0)}/s, mean ${f(r.fsync.meanPerSec, 0)}/s.`, '');
  }

  out.push('## Ratios without a budget', '');
  const ra = r.ratios;
  out.push(...mdTable(['ratio', 'value'], [
    ['hot row (all callers on product 1), modern: SDK v2 CPU/call / ours', x(ra.sdkV2CpuOverOursModernHotRow)],
    ['hot row, modern: our calls/s / SDK v2', x(ra.oursRateOverSdkV2ModernHotRow)],
    ['hot row, legacy: SDK v2 CPU/call / ours', x(ra.sdkV2CpuOverOursLegacyHotRow)],
    ['hot row, legacy: our calls/s / SDK v2', x(ra.oursRateOverSdkV2LegacyHotRow)],
    ['legacy: SDK v1 CPU/call / ours', x(ra.sdkV1CpuOverOursLegacy)],
    ['legacy: our calls/s / SDK v1', x(ra.oursRateOverSdkV1Legacy)],
    ['set_price calls/s, group commit on / off (modern, legacy)', `${x(ra.setPriceModernGcOnOverOffRate)}, ${x(ra.setPriceLegacyGcOnOverOffRate)}`],
    ['REST creates/s, group commit on / off (32 in flight)', x(ra.createsGcOnOverOff)],
    ['cost of a modern request (header validation, _meta decoding): products_get CPU/call modern / legacy', x(ra.mcpGetModernCpuOverLegacy)],
    ['  the same as a difference, µs/call (modern - legacy)', fin(ra.mcpGetModernMinusLegacyCpuUs) ? `${ra.mcpGetModernMinusLegacyCpuUs.toFixed(1)} µs` : '-'],
    ['MCP products_get (modern) CPU/call / REST GET', x(ra.mcpGetModernCpuOverRest)],
  ]));
  out.push('');

  if (r.notify) {
    const runs = [r.notify, r.notifyFloor, r.notifyLegacy, r.notifyFloorLegacy].filter((x): x is NotifyResult => !!x)
      .map((run) => ({ ...run, server: `${run.server}${run.era === 'legacy' ? ', legacy GET streams' : ', listen streams'}` }));
    out.push('## Commit to notification (`wo://products/1`, modern `subscriptions/listen` streams over raw HTTP)', '');
    out.push('Latency from just before the durable `POST /api/products/1/set_price` is sent to each subscriber receiving ' +
      '`notifications/resources/updated` (so it includes the request, the fsync and the fan-out), one commit at a time; ' +
      'percentiles over all subscribers and commits. "from response" is relative to the set_price response (negative: the notification came first). ' +
      'The floor is `bench/peers/sse-fanout.ts`: plain node:http that appends and fsyncs, then writes one frame per open stream (with its subscriptionId), measured by the same client.', '');
    out.push(...mdTable(['server', 'subscribers', 'commits', 'samples', 'p50 ms', 'p99 ms', 'max ms', 'from response p50 / p99 ms', 'spread first-last p50 / p99 ms', 'set_price p50 ms', 'missed', 'srv RSS MB'],
      runs.flatMap((run) => run.latency.map((l) => [run.server, l.subscribers, l.repeats, l.samples, f(l.p50Ms), f(l.p99Ms), f(l.maxMs), `${f(l.fromResponseP50Ms)} / ${f(l.fromResponseP99Ms)}`,
        `${f(l.spreadP50Ms)} / ${f(l.spreadP99Ms)}`, f(l.setPriceP50Ms), l.missed, f(run.rss.find((x) => x.subscribers === l.subscribers)?.rssMb, 0)])),
      ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r']));
    out.push('');
    const perStream = (run: NotifyResult) => {
      const base = run.rss.find((x) => x.subscribers === 0);
      const top = run.rss[run.rss.length - 1];
      return base && top && top.subscribers > 0 ? ((top.rssMb - base.rssMb) * 1024) / top.subscribers : Number.NaN;
    };
    out.push(`Server RSS per open listen stream (RSS delta / streams at the largest count): ${runs.map((run) => `${run.server} ${f(perStream(run), 1)} KiB`).join('; ')}.`, '');
    if (runs.some((run) => run.fanout.length)) {
      out.push(`Fan-out throughput: set_price back to back on the watched row, never more than ${r.notify.window} commits ahead of the slowest subscriber.`, '');
      out.push(...mdTable(['server', 'subscribers', 'set_price calls', 'notifications delivered', 'notifications/s', 'set_price/s', 'srv CPU µs/notification', 'srv cores', 'streams ended'],
        runs.flatMap((run) => run.fanout.map((o) => [run.server, o.subscribers, o.setPrices, `${o.delivered} of ${o.expected}`, f(o.notificationsPerSec, 0), f(o.setPricesPerSec, 0),
          f(o.srvCpuUsPerNotification, 1), f(o.srvCores), o.endedStreams])), ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r']));
      out.push('');
    }
  }

  if (r.stall) {
    out.push('## Stall isolation: a legacy GET stream that stops reading, on a hot row', '');
    out.push(...mdTable(['phase', 'set_price/s', 'set_price p99 ms', 'healthy notifications', 'healthy p50 ms', 'healthy p99 ms', 'healthy max ms', 'srv RSS MB before / peak / after', 'stalled stream'],
      r.stall.map((p) => [
        p.stalledReader ? `with a stalled reader (${f(p.ms / 1000, 1)} s)` : `without (${f(p.ms / 1000, 1)} s)`,
        f(p.setPricesPerSec, 0), f(p.setPriceP99Ms), `${p.healthyNotifications}${p.healthyMissing ? ` (${p.healthyMissing} missing)` : ''}`,
        f(p.healthyP50Ms), f(p.healthyP99Ms), f(p.healthyMaxMs), `${f(p.rssBeforeMb, 0)} / ${f(p.rssPeakMb, 0)} / ${f(p.rssAfterMb, 0)}`,
        p.stalled ? `${p.stalled.endedByServer ? 'closed by the server' : 'still open'}; ${p.stalled.notifications} notifications, ${f(p.stalled.bytesBuffered / 1024, 0)} KiB were buffered for it` : '-',
      ]), ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'l']));
    out.push('', 'Healthy latency: from just before the set_price request is sent to the healthy session\'s GET stream receiving its notification (matched by log seq). ' +
      (r.stall.some((p) => p.targetCommits !== undefined)
        ? 'With the stalled reader the load ran until enough commits were made to fill the loopback socket buffers (probed) and the server\'s 1,024-notice stream buffer, 1.25 times over, so the server had to close that stream.'
        : 'The stalled phase is short here (quick/smoke): the kernel socket buffers (about 4 MiB on loopback) absorb everything, so the server\'s own stream buffer is not reached; the full run goes on until it must overflow.'), '');
  }

  if (r.replay) {
    const p = r.replay;
    out.push('## Restart recovery and replay', '');
    out.push(...mdTable(['figure', 'value'], [
      ['log', `${p.events.toLocaleString('en-US')} events over ${p.products} products (${f(p.logMb, 0)} MB of event JSON; built directly in ${f(p.buildMs / 1000, 1)} s)`],
      ['`wo replay`', `${p.ok ? 'OK' : 'NOT OK'}: ${p.replayedEvents.toLocaleString('en-US')} events in ${f(p.replayMs, 0)} ms = **${f(p.replayEventsPerSec, 0)} events/s** (process wall ${f(p.replayWallMs / 1000, 1)} s)`],
      ['`wo verify`', `${p.verifyOk ? 'OK' : 'NOT OK'}: ${p.events.toLocaleString('en-US')} events in ${f(p.verifyMs, 0)} ms = **${f(p.verifyEventsPerSec, 0)} events/s**`],
      ['restart (`wo run`, spawn to ready)', `${f(p.restartMs, 0)} ms on this log, ${f(p.emptyStartMs, 0)} ms on an empty dir${p.emptyStartNote ? ` (${p.emptyStartNote})` : ''}`],
      ['recovery as logged', `${f(p.recoveredMs, 0)} ms for ${p.recoveredEvents.toLocaleString('en-US')} events (${p.tailEvents} tail events folded: rows are stored with every batch)`],
      ['server RSS after restart', `${f(p.srvRssMbAfterRestart, 0)} MB`],
    ]));
    out.push('');
  }

  if (r.sessions) {
    const s = r.sessions;
    out.push('## Idle legacy sessions', '');
    out.push(`${s.sessions.toLocaleString('en-US')} sessions opened (initialize + notifications/initialized, 64 at a time) in ${f(s.openMs / 1000, 1)} s ` +
      `(${f(s.sessionsPerSec, 0)}/s, each persisted with a synced write)${s.failed ? `, ${s.failed} failed` : ''}; server RSS ${f(s.rssBeforeMb, 0)} MB before, ` +
      `${f(s.rssAfterMb, 0)} MB after: **${f(s.bytesPerSession / 1024, 2)} KiB per idle session** (RSS delta / sessions; an upper bound).`, '');
  }

  if (r.cqrs) {
    const q = r.cqrs;
    const row = (what: string, w: CqrsResult['lists']['unfiltered']) =>
      [what, f(w.callsPerSec, 0), f(w.p50Ms), f(w.p99Ms), f(w.srvCpuUsPerCall, 0), String(w.errors), f(w.otherCores)];
    out.push('## Filtered lists and live queries', '');
    out.push(`${q.rows.toLocaleString('en-US')} products written directly (${f(q.writeMs / 1000, 1)} s), ${q.names} names (one name is ` +
      `${f(q.selectivity * 100, 0)}% of the rows); \`wo run\` on that dir was ready in ${f(q.startMs, 0)} ms (the pricing view folded from the log on this first start).`, '');
    out.push(...mdTable(['request', 'calls/s', 'p50 ms', 'p99 ms', 'srv µs/call', 'errors', 'other cores'], [
      row('`GET /api/products` (first page, 50 rows)', q.lists.unfiltered),
      row('`GET /api/products?name=item-<k>` (1%: first 50 of 1,000)', q.lists.filtered),
      row('`GET /api/products?name=item-<k>&order=-price`', q.lists.filteredOrdered),
      row('`POST .../set_price`, no live query', q.commits.none),
      row(`\`POST .../set_price\`, ${q.commits.liveQueries.toLocaleString('en-US')} live queries on products, none touched`, q.commits.untouched),
      row(`\`POST .../set_price\`, ${q.commits.liveQueries.toLocaleString('en-US')} live queries, one touched and notified per commit`, q.commits.live),
    ], ['l', 'r', 'r', 'r', 'r', 'r', 'r']));
    out.push('', `Filtered list p99 / unfiltered first page p99: **${f(r.ratios.filteredListP99OverUnfiltered)}x** ` +
      `(server CPU per call ${f(r.ratios.filteredListCpuOverUnfiltered)}x; ordered by price ${f(r.ratios.filteredOrderedListP99OverUnfiltered)}x). ` +
      `Commit with ${q.commits.liveQueries.toLocaleString('en-US')} live queries registered / with none: server CPU per set_price **${f(r.ratios.commitCpuWithLiveQueriesOverNone)}x**, ` +
      `p99 ${f(r.ratios.commitP99WithLiveQueriesOverNone)}x; with one of them touched by each commit, and notified (${q.commits.notified.toLocaleString('en-US')} notifications), ` +
      `${f(r.ratios.commitCpuWithNotifiedLiveQueriesOverNone)}x: the difference is the notification's delivery on its stream, not the matching.`, '');
  }

  if (r.warnings.length) {
    out.push('## Warnings', '', ...r.warnings.map((w) => `- ${w}`), '');
  }
  out.push('## Rerun', '');
  out.push('`npm run bench` (a few minutes on 2 cores), `npm run bench -- --quick` (under a minute), `npm run bench -- --smoke --out DIR` (seconds; what `npm run bench:smoke` checks). ' +
    'Every server is started on loopback by the harness and stopped at the end. Raw figures: `bench/results/latest.json`; chart: `bench/results/latest.svg`. ' +
    'On shared cores trust CPU per call over calls per second, and rerun when `other cores` is not near 0.', '');
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------------
// Chart

const COLORS = { peer: '#9aa0a6', ours: '#1a73e8', oursOff: '#8ab4f8', hot: '#e37400' } as const;

export function renderSvg(r: RunReport): string {
  const top = Math.max(0, ...r.load.flatMap((s) => s.levels.map((l) => l.concurrency)));
  const rows: BarRow[] = [];
  for (const s of r.load) {
    const l = s.levels.find((v) => v.concurrency === top) ?? s.levels[s.levels.length - 1];
    if (!l) continue;
    const color = s.peer ? COLORS.peer : s.hotRow ? COLORS.hot : s.groupCommit === 'off' ? COLORS.oursOff : COLORS.ours;
    rows.push({ label: `${s.label}${l.concurrency !== top ? ` (${l.concurrency} in flight)` : ''}`, color, values: [l.callsPerSec, l.p99Ms, l.srvCpuUsPerCall] });
  }
  const panels: Panel[] = [
    { title: 'calls/s', format: (v) => Math.round(v).toString() },
    { title: 'p99 latency, ms', format: (v) => v.toFixed(v >= 10 ? 0 : 1) },
    { title: 'server CPU µs/call', format: (v) => Math.round(v).toString() },
  ];
  const ratios: RatioRow[] = r.budgets.map((b) => {
    const m = /^(>=|<=) ([\d.]+)/.exec(b.want);
    return {
      label: b.name,
      value: b.value,
      want: (m?.[1] ?? '>=') as '>=' | '<=',
      threshold: Number(m?.[2] ?? 0),
      unit: b.unit,
      pass: b.result === 'n/a' ? undefined : b.result === 'PASS',
    };
  });
  const notifyRows: BarRow[] = [r.notify, r.notifyFloor].flatMap((run) =>
    run ? run.latency.map((l) => ({
      label: `${run.server === 'wo' ? 'writeonce' : 'plain node:http floor'}, ${l.subscribers} subscriber${l.subscribers === 1 ? '' : 's'}`,
      color: run.server === 'wo' ? COLORS.ours : COLORS.peer,
      values: [l.p50Ms, l.p99Ms, run.fanout.find((o) => o.subscribers === l.subscribers)?.notificationsPerSec],
    })) : []);
  const sections: BarSection[] = [{ title: `Request/response at ${top} in flight`, panels, rows }];
  if (notifyRows.length) {
    sections.push({
      title: 'Commit to notification (one resource, listen streams)',
      panels: [
        { title: 'p50, ms', format: (v) => v.toFixed(v >= 10 ? 0 : 1) },
        { title: 'p99, ms', format: (v) => v.toFixed(v >= 10 ? 0 : 1) },
        { title: 'fan-out notifications/s', format: (v) => Math.round(v).toString() },
      ],
      rows: notifyRows,
    });
  }
  const spec: ChartSpec = {
    title: `writeonce vs peers (npm run bench${r.mode === 'full' ? '' : ` -- --${r.mode}`})`,
    subtitle: `${r.at} · ${r.commit} · node ${r.node} · ${r.cores} cores · loadavg ${r.loadavg.before.map((v) => v.toFixed(2)).join(' ')} → ${r.loadavg.after.map((v) => v.toFixed(2)).join(' ')}`,
    sections,
    legend: [
      { label: 'peer (in memory)', color: COLORS.peer },
      { label: 'writeonce, durable, group commit on', color: COLORS.ours },
      { label: 'group commit off', color: COLORS.oursOff },
      { label: 'hot row (all callers on one product)', color: COLORS.hot },
    ],
    ratios,
    ratioTitle: 'Budgets: measured value (bar) against the budget (line)',
    footer: 'Budget lines from architecture.md, "Performance budgets". CPU per call is the figure that holds on shared cores.',
  };
  return renderChart(spec);
}
