// Runs the official MCP conformance CLI (server mode) against a URL and returns per-scenario results.
//
// Two pinned builds are installed as devDependencies:
//   conformance-legacy = @modelcontextprotocol/conformance@0.1.16        (2025-06-18 / 2025-11-25 scenarios)
//   conformance-modern = @modelcontextprotocol/conformance@0.2.0-alpha.12 (adds 2026-07-28 scenarios, and
//                        server-session-lifecycle for the legacy era)
// Both need fs.globSync, which Node 20 lacks; ./preload.mjs supplies it.
//
// How the CLI reports: with `-o <dir>` it writes one directory per scenario,
// `<dir>/server-<scenario>-<ISO timestamp, ':' and '.' replaced by '-'>/checks.json`, holding the check array
// `[{ id, name, description, status: SUCCESS|FAILURE|WARNING|INFO|SKIPPED, errorMessage?, details?, ... }]`.
// A scenario "passes" when it has no FAILURE check (that is also what the CLI's exit code counts).
// A scenario that threw, or that was skipped, writes no checks.json; the stdout summary lines
// (`✓ name: N passed, M failed`) cover those.
//
// Usage:
//   const results = await runConformance({ pkg: 'modern', url: 'http://127.0.0.1:PORT/mcp',
//                                          suite: 'all', specVersion: '2026-07-28', timeoutMs: 300_000 });
//   const results = await runConformance({ pkg: 'legacy', url, scenarios: LEGACY_GENERIC_SCENARIOS,
//                                          timeoutMs: 120_000 });

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export type ConformancePkg = 'legacy' | 'modern';

export interface RunConformanceOptions {
  pkg: ConformancePkg;
  /** Full URL of the MCP endpoint, e.g. http://127.0.0.1:1234/mcp */
  url: string;
  /** Run exactly these scenarios (one CLI process each, `--scenario X`). Takes precedence over `suite`. */
  scenarios?: string[];
  /** `--suite` (legacy: active|all|pending; modern: active|all|draft|pending). Default when neither is given: the CLI's "active". */
  suite?: string;
  /** `--spec-version`, e.g. '2025-11-25' or '2026-07-28'. */
  specVersion?: string;
  /** Overall wall-clock budget for the whole run; processes still running past it are killed. */
  timeoutMs: number;
  /** modern only: `--timeout` per scenario (CLI default 30000). */
  scenarioTimeoutMs?: number;
  /** modern only: `--force` (run a scenario even where it does not apply to --spec-version). */
  force?: boolean;
  /** Where the CLI writes its results (default: a fresh temp dir, removed afterwards unless keepOutput). */
  outputDir?: string;
  keepOutput?: boolean;
  /** Extra environment for the CLI process. */
  env?: Record<string, string>;
}

export interface FailedCheck {
  id: string;
  message: string;
}

export interface ScenarioResult {
  scenario: string;
  passed: boolean;
  failedChecks: FailedCheck[];
  /** WARNING checks (do not fail a scenario). */
  warnings: FailedCheck[];
  /** The CLI said the scenario does not apply at this spec version (modern, --scenario + --spec-version). */
  skipped: boolean;
  /** Counts by status. */
  counts: { success: number; failure: number; warning: number; info: number; skipped: number };
  /** Raw check objects from checks.json (empty when the scenario wrote none). */
  checks: ConformanceCheck[];
  /** The CLI's stdout+stderr for this scenario, ANSI codes stripped. */
  log: string;
}

export interface ConformanceCheck {
  id: string;
  name?: string;
  description?: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED' | string;
  errorMessage?: string;
  details?: unknown;
  [k: string]: unknown;
}

/** The generic (fixture-free or mostly fixture-free) legacy-era scenarios present in 0.1.16. */
export const LEGACY_GENERIC_SCENARIOS = [
  'server-initialize',
  'ping',
  'tools-list',
  'resources-list',
  'dns-rebinding-protection',
  'server-sse-multiple-streams',
  'resources-subscribe',
  'resources-unsubscribe',
  'server-sse-polling',
] as const;

/** server-session-lifecycle is not in 0.1.16; run it from the modern build at a legacy spec version. */
export const MODERN_LEGACY_ERA_SCENARIOS = ['server-session-lifecycle'] as const;

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PRELOAD = path.join(HERE, 'preload.mjs');
const REPO_ROOT = path.resolve(HERE, '..', '..');

function cliPath(pkg: ConformancePkg): string {
  const name = pkg === 'legacy' ? 'conformance-legacy' : 'conformance-modern';
  let pkgJsonPath: string;
  try {
    pkgJsonPath = createRequire(import.meta.url).resolve(`${name}/package.json`);
  } catch {
    pkgJsonPath = path.join(REPO_ROOT, 'node_modules', name, 'package.json');
  }
  const pj = JSON.parse(readFileSync(pkgJsonPath, 'utf8')) as { bin?: string | Record<string, string> };
  const bin = typeof pj.bin === 'string' ? pj.bin : (pj.bin?.conformance ?? Object.values(pj.bin ?? {})[0]);
  if (!bin) throw new Error(`${name}: no bin in package.json`);
  return path.join(path.dirname(pkgJsonPath), bin);
}

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g;
const stripAnsi = (s: string) => s.replace(ANSI, '');

interface SpawnOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  timedOut: boolean;
}

function runCli(args: string[], cwd: string, env: Record<string, string>, deadline: number): Promise<SpawnOutcome> {
  return new Promise((resolve) => {
    const remaining = Math.max(0, deadline - Date.now());
    const child = spawn(process.execPath, args, {
      cwd,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let timedOut = false;
    child.stdout.on('data', (d: Buffer) => (output += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (output += d.toString('utf8')));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGTERM');
      setTimeout(() => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'), 2000).unref();
    }, remaining);
    child.on('error', (err) => {
      output += `\n[runner] spawn error: ${err.message}\n`;
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output: stripAnsi(output), timedOut });
    });
  });
}

const DIR_RE = /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;

function readResultDirs(outDir: string): Map<string, ConformanceCheck[]> {
  const found = new Map<string, ConformanceCheck[]>();
  if (!existsSync(outDir)) return found;
  for (const entry of readdirSync(outDir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const m = DIR_RE.exec(entry.name);
    if (!m) continue;
    const file = path.join(outDir, entry.name, 'checks.json');
    if (!existsSync(file)) continue;
    try {
      const checks = JSON.parse(readFileSync(file, 'utf8')) as ConformanceCheck[];
      found.set(m[1], Array.isArray(checks) ? checks : []);
    } catch {
      found.set(m[1], [{ id: 'runner-bad-checks-json', status: 'FAILURE', errorMessage: `unparseable ${file}` }]);
    }
  }
  return found;
}

/** Split a suite run's output into per-scenario chunks on the CLI's `=== Running scenario: X ===` lines. */
function splitLog(output: string): Map<string, string> {
  const chunks = new Map<string, string>();
  const re = /^=== Running scenario: (.+?) ===$/gm;
  const marks: { name: string; start: number }[] = [];
  for (let m = re.exec(output); m; m = re.exec(output)) marks.push({ name: m[1], start: m.index });
  const summaryAt = output.indexOf('=== SUMMARY ===');
  marks.forEach((mk, i) => {
    const end = i + 1 < marks.length ? marks[i + 1].start : summaryAt > mk.start ? summaryAt : output.length;
    chunks.set(mk.name, output.slice(mk.start, end));
  });
  return chunks;
}

/** `✓ name: 3 passed, 0 failed` lines of the suite summary. */
function parseSummary(output: string): Map<string, { passed: number; failed: number }> {
  const res = new Map<string, { passed: number; failed: number }>();
  const at = output.indexOf('=== SUMMARY ===');
  if (at < 0) return res;
  const re = /^[✓✗] (\S+): (\d+) passed, (\d+) failed$/gm;
  const tail = output.slice(at);
  for (let m = re.exec(tail); m; m = re.exec(tail)) res.set(m[1], { passed: Number(m[2]), failed: Number(m[3]) });
  return res;
}

function messageOf(c: ConformanceCheck): string {
  if (c.errorMessage) return String(c.errorMessage);
  const d = c.details as { message?: unknown } | undefined;
  if (d && typeof d.message === 'string') return d.message;
  return c.description ?? c.name ?? c.id;
}

function toResult(scenario: string, checks: ConformanceCheck[], log: string, extraFailures: FailedCheck[] = [], skipped = false): ScenarioResult {
  const counts = { success: 0, failure: 0, warning: 0, info: 0, skipped: 0 };
  for (const c of checks) {
    if (c.status === 'SUCCESS') counts.success++;
    else if (c.status === 'FAILURE') counts.failure++;
    else if (c.status === 'WARNING') counts.warning++;
    else if (c.status === 'SKIPPED') counts.skipped++;
    else counts.info++;
  }
  const failedChecks = [
    ...checks.filter((c) => c.status === 'FAILURE').map((c) => ({ id: c.id, message: messageOf(c) })),
    ...extraFailures,
  ];
  const warnings = checks.filter((c) => c.status === 'WARNING').map((c) => ({ id: c.id, message: messageOf(c) }));
  return { scenario, passed: !skipped && failedChecks.length === 0, failedChecks, warnings, skipped, counts, checks, log };
}

function commonArgs(opts: RunConformanceOptions, outDir: string): string[] {
  const args = ['--url', opts.url, '-o', outDir];
  if (opts.specVersion) args.push('--spec-version', opts.specVersion);
  if (opts.pkg === 'modern') {
    if (opts.scenarioTimeoutMs) args.push('--timeout', String(opts.scenarioTimeoutMs));
    if (opts.force) args.push('--force');
  }
  return args;
}

export async function runConformance(opts: RunConformanceOptions): Promise<ScenarioResult[]> {
  const deadline = Date.now() + opts.timeoutMs;
  const base = ['--import', PRELOAD, cliPath(opts.pkg), 'server'];
  const ownDir = !opts.outputDir;
  const outRoot = opts.outputDir ?? mkdtempSync(path.join(tmpdir(), `wo-conformance-${opts.pkg}-`));
  mkdirSync(outRoot, { recursive: true });
  const env = opts.env ?? {};
  const results: ScenarioResult[] = [];
  try {
    if (opts.scenarios && opts.scenarios.length > 0) {
      for (const scenario of opts.scenarios) {
        if (Date.now() >= deadline) {
          results.push(toResult(scenario, [], '', [{ id: 'runner-timeout', message: 'not run: overall timeout reached' }]));
          continue;
        }
        const outDir = path.join(outRoot, scenario.replace(/[^A-Za-z0-9._-]/g, '_'));
        const run = await runCli([...base, ...commonArgs(opts, outDir), '--scenario', scenario], outRoot, env, deadline);
        const checks = readResultDirs(outDir).get(scenario);
        const extra: FailedCheck[] = [];
        if (run.timedOut) extra.push({ id: 'runner-timeout', message: `CLI killed after overall timeout (${opts.timeoutMs} ms)` });
        const skipped = !checks && /^SKIPPED: scenario /m.test(run.output);
        if (!checks && !skipped && !run.timedOut) {
          const why = run.output.match(/^(Validation error:[\s\S]*?Unknown scenario[^\n]*|Server test error:[^\n]*)/m)?.[0];
          extra.push({ id: 'runner-no-results', message: (why ?? `CLI exited ${run.code ?? run.signal} without writing checks.json`).replace(/\s*\n\s*/g, ' ') });
        }
        results.push(toResult(scenario, checks ?? [], run.output, extra, skipped));
      }
    } else {
      const args = [...base, ...commonArgs(opts, outRoot)];
      if (opts.suite) args.push('--suite', opts.suite);
      const run = await runCli(args, outRoot, env, deadline);
      const byScenario = readResultDirs(outRoot);
      const logs = splitLog(run.output);
      const summary = parseSummary(run.output);
      const names = [...new Set([...logs.keys(), ...byScenario.keys()])];
      for (const scenario of names) {
        const checks = byScenario.get(scenario);
        const log = logs.get(scenario) ?? '';
        const extra: FailedCheck[] = [];
        if (!checks) {
          const s = summary.get(scenario);
          if (s && s.failed > 0) {
            const err = log.match(/^Failed to run scenario [^\n]*\n?[^\n]*/m)?.[0];
            extra.push({ id: 'scenario-error', message: err ?? 'scenario failed without writing checks.json' });
          } else if (!s) {
            extra.push({
              id: run.timedOut ? 'runner-timeout' : 'runner-no-results',
              message: run.timedOut ? `CLI killed after overall timeout (${opts.timeoutMs} ms)` : 'no checks.json and no summary line',
            });
          }
        }
        results.push(toResult(scenario, checks ?? [], log, extra));
      }
      if (names.length === 0) {
        results.push(
          toResult('(cli)', [], run.output, [
            { id: run.timedOut ? 'runner-timeout' : 'runner-no-results', message: `CLI exited ${run.code ?? run.signal}; no scenario ran: ${run.output.trim().split('\n').slice(-3).join(' | ').slice(0, 500)}` },
          ]),
        );
      }
    }
  } finally {
    if (ownDir && !opts.keepOutput) rmSync(outRoot, { recursive: true, force: true });
  }
  return results;
}

/** Scenario names the CLI offers (`list --server [--spec-version v]`). */
export async function listServerScenarios(pkg: ConformancePkg, specVersion?: string, timeoutMs = 30_000): Promise<string[]> {
  const args = ['--import', PRELOAD, cliPath(pkg), 'list', '--server'];
  if (specVersion) args.push('--spec-version', specVersion);
  const run = await runCli(args, tmpdir(), {}, Date.now() + timeoutMs);
  return [...run.output.matchAll(/^ {2}- (\S+)/gm)].map((m) => m[1]);
}

/** Render results as a compact text report (one line per scenario, failed checks indented). */
export function formatResults(results: ScenarioResult[]): string {
  const lines: string[] = [];
  for (const r of results) {
    const mark = r.skipped ? 'SKIP' : r.passed ? 'PASS' : 'FAIL';
    lines.push(`${mark} ${r.scenario} (${r.counts.success} ok, ${r.counts.failure} failed, ${r.counts.warning} warn)`);
    for (const f of r.failedChecks) lines.push(`     ✗ ${f.id}: ${f.message.split('\n')[0].slice(0, 300)}`);
  }
  const passed = results.filter((r) => r.passed).length;
  lines.push(`conformance: ${passed}/${results.length} scenarios passed`);
  return lines.join('\n');
}
