// Reading V8 .cpuprofile files (node --cpu-prof): self time per function and per area, counted only inside a
// measured window, with frames in the repo's .ts files mapped back to their TypeScript line (tsx runs esbuild
// with minifyWhitespace, so the raw profile says line 1 for everything: the transform is redone with tsx's
// options). Used by bench/profile-core.ts and bench/profile-run.ts.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderTable } from './table.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

type Transform = (code: string, opts: Record<string, unknown>) => { code: string; map: string };
let esbuildTransform: Transform | null | undefined;
const maps = new Map<string, SourceMap | null>();

/** The source map of tsx's output for a repo .ts file, rebuilt with tsx 4's esbuild options. */
export async function sourceMapOf(path: string): Promise<SourceMap | null> {
  if (maps.has(path)) return maps.get(path)!;
  let map: SourceMap | null = null;
  try {
    if (esbuildTransform === undefined) {
      esbuildTransform = ((await import('esbuild')) as unknown as { transformSync: Transform }).transformSync;
    }
    if (esbuildTransform && existsSync(path)) {
      const out = esbuildTransform(readFileSync(path, 'utf8'), {
        loader: 'ts',
        format: 'esm',
        target: `node${process.versions.node}`,
        sourcemap: true,
        sourcefile: path,
        minifyWhitespace: true,
        keepNames: true,
      });
      map = new SourceMap(JSON.parse(out.map));
    }
  } catch {
    esbuildTransform ??= null;
  }
  maps.set(path, map);
  return map;
}

const sourceLines = new Map<string, string[]>();
export function sourceLine(path: string, line: number): string {
  if (!sourceLines.has(path)) sourceLines.set(path, existsSync(path) ? readFileSync(path, 'utf8').split('\n') : []);
  return (sourceLines.get(path)![line] ?? '').trim().replace(/\s+/g, ' ').slice(0, 70);
}

export function shortUrl(url: string): string {
  const u = url.replace(/^file:\/\//, '');
  const nm = u.lastIndexOf('node_modules/');
  if (nm >= 0) return u.slice(nm + 'node_modules/'.length);
  return u.startsWith(repoRoot) ? u.slice(repoRoot.length) : u;
}

/**
 * `wo run` serves a checkout's src/ bundled by esbuild (bin/built-sources.mjs: .wo-build/<hash>/*.mjs, no source
 * maps); esbuild heads each module's code with a `// src/<file>.ts` comment: the module a built line came from.
 */
const builtModules = new Map<string, Array<readonly [number, string]>>();
export function builtModuleOf(url: string, line: number): string | undefined {
  if (!url.includes('/.wo-build/')) return undefined;
  const path = url.replace(/^file:\/\//, '');
  let marks = builtModules.get(path);
  if (marks === undefined) {
    marks = [];
    try {
      readFileSync(path, 'utf8').split('\n').forEach((l, i) => {
        if (l.startsWith('// src/')) marks!.push([i, l.slice(3)]);
      });
    } catch {
      // pruned since: the frame keeps its built name
    }
    builtModules.set(path, marks);
  }
  let found: string | undefined;
  for (const [at, module] of marks) {
    if (at > line) break;
    found = module;
  }
  return found;
}

export function areaOf(f: CallFrame): string {
  if (!f.url) return f.functionName.startsWith('(') ? f.functionName : '(native)';
  if (builtModuleOf(f.url, f.lineNumber) !== undefined) return 'src/ (ours)';
  const u = shortUrl(f.url);
  if (u.startsWith('src/')) return 'src/ (ours)';
  if (u.startsWith('bench/')) return 'bench/ (peer)';
  if (u.startsWith('effect/')) return 'effect';
  if (u.startsWith('@effect/')) return '@effect/*';
  if (u.startsWith('node:')) return 'node: internals';
  return u.includes('/') ? u.split('/')[0] : u;
}

/** A readable name for a frame; repo .ts frames are mapped to their original line. */
export async function labelOf(f: CallFrame): Promise<string> {
  const name = f.functionName || '(anonymous)';
  if (!f.url) return name;
  const u = shortUrl(f.url);
  const built = builtModuleOf(f.url, f.lineNumber);
  if (built !== undefined) return `${name}  ${built} (built line ${f.lineNumber + 1})`;
  const path = f.url.replace(/^file:\/\//, '');
  if (path.startsWith(repoRoot) && path.endsWith('.ts')) {
    const entry = (await sourceMapOf(path))?.findEntry(f.lineNumber, f.columnNumber);
    if (entry && 'originalLine' in entry) {
      return `${name}  ${u}:${entry.originalLine + 1}  ${sourceLine(path, entry.originalLine)}`;
    }
  }
  return `${name}  ${u}:${f.lineNumber + 1}:${f.columnNumber + 1}`;
}

export interface SelfTimes {
  /** busy µs in the window (idle excluded) */
  total: number;
  byFunction: Map<string, number>;
  byArea: Map<string, number>;
  /** total (self + callees) time per repo .ts function (src/ or bench/), each counted once per sample */
  inclusive: Map<string, number>;
  /** false when the window could not be located in the profile and every sample was counted */
  windowed: boolean;
}

export async function selfTimes(profile: CpuProfile, fromUs: number, toUs: number): Promise<SelfTimes> {
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  const windowed = fromUs >= profile.startTime && toUs <= profile.endTime;
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  const labels = new Map<number, string>();
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const inclusive = new Map<string, number>();
  const ownFrames = new Map<number, string[]>();
  const ownFramesOf = async (id: number): Promise<string[]> => {
    let list = ownFrames.get(id);
    if (list) return list;
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const f = byNode.get(at)!.callFrame;
      const u = shortUrl(f.url);
      if (f.url && (u.startsWith('src/') || u.startsWith('bench/') || builtModuleOf(f.url, f.lineNumber) !== undefined)) seen.add(await labelOf(f));
    }
    ownFrames.set(id, (list = [...seen]));
    return list;
  };
  let total = 0;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    // The delta before sample i+1 is the time sample i stood for.
    const dt = profile.timeDeltas[i + 1] ?? 0;
    if (windowed && (t < fromUs || t > toUs)) continue;
    const node = byNode.get(profile.samples[i])!;
    if (node.callFrame.functionName === '(idle)') continue;
    total += dt;
    let key = labels.get(node.id);
    if (key === undefined) labels.set(node.id, (key = await labelOf(node.callFrame)));
    byFunction.set(key, (byFunction.get(key) ?? 0) + dt);
    const a = areaOf(node.callFrame);
    byArea.set(a, (byArea.get(a) ?? 0) + dt);
    for (const k of await ownFramesOf(node.id)) inclusive.set(k, (inclusive.get(k) ?? 0) + dt);
  }
  return { total, byFunction, byArea, inclusive, windowed };
}

/** Monotonic clock in µs, the profile's own clock (CLOCK_MONOTONIC, like process.hrtime). */
export const monoUs = (): number => Number(process.hrtime.bigint() / 1000n);

export interface WindowProfile extends SelfTimes {
  /** the profile file kept (the busiest thread: the main thread, which served the requests) */
  file: string;
}

/**
 * Reads every .cpuprofile in `profDir` (one per thread), counts the samples in [fromUs, toUs], keeps the
 * busiest thread's file as `keepAs`, and deletes `profDir`.
 */
export async function readWindow(profDir: string, fromUs: number, toUs: number, keepAs: string): Promise<WindowProfile> {
  const files = readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile'));
  const results: (SelfTimes & { f: string })[] = [];
  for (const f of files) {
    const profile = JSON.parse(readFileSync(join(profDir, f), 'utf8')) as CpuProfile;
    results.push({ f, ...(await selfTimes(profile, fromUs, toUs)) });
  }
  results.sort((a, b) => b.total - a.total);
  if (results.length === 0) throw new Error(`no profile written in ${profDir} (did the server exit cleanly?)`);
  const main = results[0];
  mkdirSync(join(keepAs, '..'), { recursive: true });
  copyFileSync(join(profDir, main.f), keepAs);
  rmSync(profDir, { recursive: true, force: true });
  return { ...main, file: keepAs };
}

/** Self time by area, the top functions overall and the top functions in src/ (or bench/), per unit of work. */
export function renderSelfTimes(p: SelfTimes, units: number, top: number, unit = 'call'): string {
  const us = (v: number) => (units ? v / units : Number.NaN);
  const share = (v: number) => `${((100 * v) / p.total).toFixed(1)}%`;
  const sorted = [...p.byFunction].sort((a, b) => b[1] - a[1]);
  const rows = (list: [string, number][]) => list.slice(0, top).map(([k, v]) => [k, share(v), us(v)]);
  const out = [renderTable(['area', 'share', `µs/${unit}`], rows([...p.byArea].sort((a, b) => b[1] - a[1])))];
  out.push(`\ntop ${top} self time, all code:`, renderTable(['function', 'share', `µs/${unit}`], rows(sorted)));
  const ours = sorted.filter(([k]) => /  src\//.test(k));
  if (ours.length) out.push(`\ntop ${top} self time in src/:`, renderTable(['function', 'share', `µs/${unit}`], rows(ours)));
  const incl = [...p.inclusive].sort((a, b) => b[1] - a[1]).filter(([k]) => /  src\//.test(k));
  if (incl.length) out.push(`\ntop ${top} total time (self + callees) in src/:`, renderTable(['function', 'share', `µs/${unit}`], rows(incl)));
  const peer = sorted.filter(([k]) => /  bench\//.test(k));
  if (peer.length && !ours.length) out.push(`\ntop ${top} self time in bench/:`, renderTable(['function', 'share', `µs/${unit}`], rows(peer)));
  return out.join('\n');
}
