// Start a benchmark server as a child process and wait until it is ready.
// Ready means: it printed `listening <url>` on stdout (or a line matching `ready`), or (when a URL is
// known up front) its port answers.
import { spawn as spawnChild, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';

export interface SpawnOptions {
  /** Path of the entry, run as `node --import tsx <file> ...args` (relative to the repo root). */
  file: string;
  /** Arguments after the entry, e.g. ['run', 'examples/pricing', '--listen', '127.0.0.1:0']. */
  args?: string[];
  /** Load tsx with `--import tsx` (default true); false for entries that register it themselves (bin/wo.mjs). */
  importTsx?: boolean;
  /** Announcement to wait for on stdout; its first capture group is the URL (default: `listening <url>`).
   *  Matched against the last 4 KiB of output; don't use the `g` or `y` flags. */
  ready?: RegExp;
  env?: Record<string, string>;
  /** Extra node flags placed before the entry, e.g. ['--cpu-prof'] (not allowed in NODE_OPTIONS). */
  nodeArgs?: string[];
  /** Known URL to poll instead of waiting for the announcement (when the port is fixed). */
  url?: string;
  readyTimeoutMs?: number;
  /** Grace period between SIGTERM and SIGKILL. */
  stopTimeoutMs?: number;
  /** Echo the child's stderr (default: only on failure). */
  inheritStderr?: boolean;
}

export interface SpawnedServer {
  pid: number;
  url: string;
  stop(): Promise<void>;
  /** undefined while the child runs; otherwise how it ended and the tail of its stderr. */
  exitReport(): string | undefined;
  /** The last 16 KiB of the child's stdout (e.g. log lines printed after the ready announcement). */
  stdoutTail(): string;
}

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const LISTENING = /listening\s+(https?:\/\/\S+)/;
// Children that outlive a crashed parent would skew the next run's CPU numbers.
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export async function spawnServer(opts: SpawnOptions): Promise<SpawnedServer> {
  const tsx = opts.importTsx === false ? [] : ['--import', 'tsx'];
  const child = spawnChild(process.execPath, [...(opts.nodeArgs ?? []), ...tsx, opts.file, ...(opts.args ?? [])], {
    cwd: repoRoot,
    env: { ...process.env, PORT: '0', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => live.delete(child));

  const stderrTail: string[] = [];
  child.stderr!.setEncoding('utf8').on('data', (s: string) => {
    if (opts.inheritStderr) process.stderr.write(s);
    stderrTail.push(s);
    if (stderrTail.length > 50) stderrTail.shift();
  });

  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.stopTimeoutMs ?? 3000);
    await exited;
    clearTimeout(timer);
  };

  let stdoutTail = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => {
    stdoutTail = (stdoutTail + s).slice(-16_384);
  });

  try {
    const url = await waitReady(child, exited, opts);
    // Keep draining stdout so a chatty child never blocks on a full pipe.
    child.stdout!.resume();
    const exitReport = (): string | undefined => {
      if (child.exitCode === null && child.signalCode === null) return undefined;
      const tail = stderrTail.join('').trim();
      return `exited (code ${child.exitCode}, signal ${child.signalCode})${tail ? `\n--- stderr ---\n${tail}` : ''}`;
    };
    return { pid: child.pid!, url, stop, exitReport, stdoutTail: () => stdoutTail };
  } catch (err) {
    await stop();
    const tail = stderrTail.join('').trim();
    throw new Error(`${opts.file}: ${(err as Error).message}${tail ? `\n--- stderr ---\n${tail}` : ''}`);
  }
}

function waitReady(child: ChildProcess, exited: Promise<void>, opts: SpawnOptions): Promise<string> {
  const timeoutMs = opts.readyTimeoutMs ?? 15_000;
  return new Promise<string>((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | null, url?: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(url!);
    };
    const timer = setTimeout(() => finish(new Error(`not ready after ${timeoutMs} ms`)), timeoutMs);
    void exited.then(() => finish(new Error(`exited early (code ${child.exitCode}, signal ${child.signalCode})`)));

    const ready = opts.ready ?? LISTENING;
    let buffered = '';
    child.stdout!.setEncoding('utf8').on('data', (s: string) => {
      buffered = (buffered + s).slice(-4096);
      const m = ready.exec(buffered);
      if (m) finish(null, m[1].replace(/\/$/, ''));
    });

    if (opts.url) void pollPort(opts.url, () => settled).then((ok) => ok && finish(null, opts.url));
  });
}

/** Try TCP connects every 50 ms until one succeeds or `done()` says to stop. */
async function pollPort(url: string, done: () => boolean): Promise<boolean> {
  const { hostname, port } = new URL(url);
  while (!done()) {
    const ok = await new Promise<boolean>((resolve) => {
      const sock = connect({ host: hostname, port: Number(port) });
      sock.once('connect', () => (sock.destroy(), resolve(true)));
      sock.once('error', () => resolve(false));
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}
