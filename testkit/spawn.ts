/**
 * The one process spawner of test/, bench/ and scripts/: a node entry (the `wo` binary, or a bench peer) as a child
 * process, ready once it announces its URL on stdout; and `wo <args>` (or any node entry) run to completion.
 *
 * A child that does not announce in time, or exits first, is killed and the promise rejects with its output.
 * Children still running when this process exits are killed with it, so none outlives a crashed test or bench.
 */
import { spawn, type ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

export const ROOT = path.resolve(import.meta.dirname, "..")
/** The `wo` binary of this checkout (it registers tsx itself, after loading the big dependencies natively). */
export const WO_BIN = path.join(ROOT, "bin/wo.mjs")
/** `... serving app "<name>" (<types>) at http://HOST:PORT`, logged once `wo run` listens. */
export const WO_READY = /serving app "[^"]+" \([^)]*\) at (http:\/\/\S+)/

export interface SpawnOptions {
  /** Added to this process's environment; an undefined value removes the variable. */
  readonly env?: Record<string, string | undefined>
  /** Node flags before the entry, e.g. ["--cpu-prof"] (those not allowed in NODE_OPTIONS). */
  readonly nodeArgs?: ReadonlyArray<string>
  /** Load tsx with `--import tsx` first (default false: bin/wo.mjs registers it itself). */
  readonly importTsx?: boolean
  /** The announcement on stdout; its first capture group is the URL. No `g` or `y` flag. */
  readonly ready: RegExp
  /** How long to wait for the announcement before killing the child (default 30 s). */
  readonly readyTimeoutMs?: number
  /** If set, `stop()` follows SIGTERM with SIGKILL after this grace period; by default it waits for the exit. */
  readonly stopTimeoutMs?: number
  /** Keep only the last this many characters of output (default: all of it). */
  readonly outputLimit?: number
  /** Echo the child's stderr as it comes (default: it is only kept). */
  readonly inheritStderr?: boolean
  /** Run the child under `ulimit -n <fdLimit>` (through bash, which then execs node: the pid is node's). */
  readonly fdLimit?: number
}

export interface Spawned {
  readonly pid: number
  readonly child: ChildProcess
  /** The URL as announced (for a 0.0.0.0 bind, that address), without a trailing slash. */
  readonly url: string
  /** Where this machine reaches it: http://127.0.0.1:<port>. */
  readonly loopbackUrl: string
  /** stdout and stderr, interleaved as they arrived. */
  readonly output: () => string
  /** stdout only (log lines printed after the announcement). */
  readonly stdout: () => string
  /** undefined while the child runs; otherwise how it ended and the tail of its stderr. */
  readonly exitReport: () => string | undefined
  /** Sends `signal` (default SIGTERM) unless the child has already exited; resolves with its exit code. */
  readonly stop: (signal?: NodeJS.Signals) => Promise<number | null>
}

/** This process's environment with `env` applied; an undefined value removes the variable. */
export const environment = (env: Record<string, string | undefined> = {}): NodeJS.ProcessEnv => {
  const out: Record<string, string | undefined> = { ...process.env, ...env }
  for (const [k, v] of Object.entries(out)) if (v === undefined) delete out[k]
  return out as NodeJS.ProcessEnv
}

const live = new Set<ChildProcess>()
process.once("exit", () => {
  for (const c of live) c.kill("SIGKILL")
})

const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null

const keepTail = (limit: number | undefined) => {
  let text = ""
  return {
    add: (s: string) => {
      text += s
      if (limit !== undefined && text.length > limit) text = text.slice(-limit)
    },
    get: () => text
  }
}

/** Spawns `node [nodeArgs] [--import tsx] <entry> <args>` in the repo root and resolves once it announces its URL. */
export const spawnNode = (entry: string, args: ReadonlyArray<string>, options: SpawnOptions): Promise<Spawned> =>
  new Promise((resolve, reject) => {
    const tsx = options.importTsx ? ["--import", "tsx"] : []
    const argv = [...(options.nodeArgs ?? []), ...tsx, entry, ...args]
    const [file, fileArgs] = options.fdLimit === undefined
      ? [process.execPath, argv]
      : ["bash", ["-c", `ulimit -n ${Math.floor(options.fdLimit)} && exec "$0" "$@"`, process.execPath, ...argv]]
    const child = spawn(file, fileArgs, {
      cwd: ROOT,
      env: environment(options.env),
      stdio: ["ignore", "pipe", "pipe"]
    })
    live.add(child)
    const exited = new Promise<number | null>((r) =>
      child.once("exit", (code) => {
        live.delete(child)
        r(code)
      })
    )
    const output = keepTail(options.outputLimit)
    const stdout = keepTail(options.outputLimit)
    const stderr = keepTail(16_384)
    let announced = ""
    let settled = false

    const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
      if (running(child)) child.kill(signal)
      const timer = options.stopTimeoutMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), options.stopTimeoutMs)
      const code = await exited
      clearTimeout(timer)
      return code
    }
    const exitReport = () => {
      if (running(child)) return undefined
      const tail = stderr.get().trim()
      return `exited (code ${child.exitCode}, signal ${child.signalCode})${tail ? `\n--- stderr ---\n${tail}` : ""}`
    }
    const fail = (why: string) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      if (running(child)) child.kill("SIGKILL")
      reject(new Error(`${path.relative(ROOT, entry) || entry} ${why}:\n${output.get()}`))
    }

    child.stdout!.setEncoding("utf8").on("data", (s: string) => {
      output.add(s)
      stdout.add(s)
      if (settled) return
      announced = (announced + s).slice(-4096)
      const m = options.ready.exec(announced)
      if (m === null) return
      settled = true
      clearTimeout(timer)
      const url = m[1].replace(/\/$/, "")
      resolve({
        pid: child.pid!,
        child,
        url,
        loopbackUrl: `http://127.0.0.1:${new URL(url).port}`,
        output: output.get,
        stdout: stdout.get,
        exitReport,
        stop
      })
    })
    child.stderr!.setEncoding("utf8").on("data", (s: string) => {
      if (options.inheritStderr) process.stderr.write(s)
      output.add(s)
      stderr.add(s)
    })
    child.once("exit", (code, signal) => fail(`exited (code ${code}, signal ${signal}) before serving`))
    const readyTimeoutMs = options.readyTimeoutMs ?? 30_000
    const timer = setTimeout(() => fail(`did not start in ${readyTimeoutMs} ms`), readyTimeoutMs)
    timer.unref()
  })

export type WoOptions = Omit<SpawnOptions, "ready" | "importTsx"> & { readonly ready?: RegExp }

/** Spawns `wo <args>` (e.g. run <app> --data <dir> --listen 127.0.0.1:0) and resolves once it serves. */
export const spawnWo = (args: ReadonlyArray<string>, options: WoOptions = {}): Promise<Spawned> =>
  spawnNode(WO_BIN, args, { ...options, ready: options.ready ?? WO_READY })

export interface WoResult {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
  /** It was still running after `timeoutMs` and was killed. */
  readonly timedOut: boolean
  readonly wallMs: number
}

export interface RunOptions {
  /** Added to this process's environment; an undefined value removes the variable. */
  readonly env?: Record<string, string | undefined>
  /** Kill it with SIGKILL if it still runs after this long (default 20 s; Infinity: never). */
  readonly timeoutMs?: number
  /** Load tsx with `--import tsx` first (default false). */
  readonly importTsx?: boolean
}

/** Runs `node [--import tsx] <entry> <args>` in the repo root to completion. */
export const runNode = (entry: string, args: ReadonlyArray<string>, options: RunOptions = {}): Promise<WoResult> =>
  new Promise((resolve) => {
    const started = performance.now()
    const tsx = options.importTsx ? ["--import", "tsx"] : []
    const child = spawn(process.execPath, [...tsx, entry, ...args], { cwd: ROOT, env: environment(options.env), stdio: ["ignore", "pipe", "pipe"] })
    live.add(child)
    let stdout = ""
    let stderr = ""
    let timedOut = false
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c))
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c))
    // A hang guard, not a budget: a wo command on a loaded 2-core machine took over 20 s.
    const timeoutMs = options.timeoutMs ?? 60_000
    const timer = Number.isFinite(timeoutMs)
      ? setTimeout(() => {
          timedOut = true
          child.kill("SIGKILL")
        }, timeoutMs)
      : undefined
    child.once("close", (code, signal) => {
      clearTimeout(timer)
      live.delete(child)
      resolve({ code, signal, stdout, stderr, timedOut, wallMs: performance.now() - started })
    })
  })

/** Runs `wo <args>` to completion (see runNode for the deadline). */
export const runWo = (args: ReadonlyArray<string>, options: Omit<RunOptions, "importTsx"> = {}): Promise<WoResult> => runNode(WO_BIN, args, options)

/** VmRSS of a live process in KiB, from /proc/<pid>/status (Linux). */
export const rssKb = (pid: number): number => {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))
  if (!m) throw new Error(`no VmRSS for pid ${pid}`)
  return Number(m[1])
}
