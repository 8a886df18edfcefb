/**
 * `wo dev` loads each saved version of the app in a worker thread first, and the server imports it only once it
 * loaded there, within a time limit. An app's code runs when it is imported, and in the server's own thread an
 * endless loop would stop every request, `process.exit` would end the server, a top-level await that never settles
 * would hold the reload (and every later save) forever, and a promise rejected with no handler would end the server
 * as an uncaught error. In a worker, each of these fails only that reload: `process.exit` and an uncaught error end
 * the worker alone, and a worker still loading at the limit is stopped (terminate interrupts even a loop that never
 * yields).
 *
 * The worker only proves that the version loads: the catalog holds functions (methods, decide, evolve), which cannot
 * cross threads, so the server then imports the version itself. An app whose import behaves differently the second
 * time (a loop only now and then) is not caught; the server's import is still bounded in time, so a second
 * import that never settles fails the reload too.
 *
 * The worker loads the runtime once, as the server did (app-worker.ts), and imports version after version under
 * their tags, as the server does. A version that fails in any way takes its worker with it, and so does every
 * RECYCLE_AFTER-th version: each kept version's modules stay in the worker's memory, and the next worker starts
 * warming at once, so that a save pays for the app's own import only.
 */
import { Effect } from "effect"
import * as path from "node:path"
import { Worker } from "node:worker_threads"
import { registeredAppLoader, type RegisteredAppLoader } from "../app-loading/registered-loader.ts"
import { LOAD_RUNTIME, runtimeData } from "../app-loading/app-worker.ts"
import { AppLoadError, cannotLoad, noExport, versionUrl, whereInApp, type Thrown } from "../app-loading/load-app.ts"

/** Versions one worker loads before it is replaced (its memory with them). */
const RECYCLE_AFTER = 20
/** How long a worker may take to start (our code, not the app's; a loaded machine can take seconds). */
const STARTUP_BOUND_MS = 60_000
/** What the app printed while loading, kept to show beside a failure. */
const OUTPUT_KEPT = 16 * 1024

/** The app's import in the worker settled: it loaded (and exported an app, or not), or it threw. */
type Settled =
  | { readonly loaded: true; readonly exported: boolean }
  | { readonly loaded: false; readonly thrown: Thrown }

/** What a worker posts: warmed; an import settled; or its own start failed. */
type Report = { readonly ready: true } | Settled | { readonly broken: Thrown }

/**
 * The worker's program, plain JavaScript (no loader is registered in its thread yet): load the runtime as the server
 * did (app-worker.ts `LOAD_RUNTIME`), say so, then import each URL it is sent. Its
 * message port keeps it alive: a top-level await that never settles times out rather than ending the thread.
 */
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads")
const plain = (e) => e instanceof Error ? { message: e.message, stack: e.stack, code: e.code } : { message: String(e) }
${LOAD_RUNTIME}
// A full collection after each version, as the server makes after each reload (collect-garbage.ts says why).
const collect = (() => {
  const v8 = require("node:v8")
  v8.setFlagsFromString("--expose-gc")
  const gc = require("node:vm").runInNewContext("gc")
  v8.setFlagsFromString("--no-expose-gc")
  return gc
})()
;(async () => {
  await loadRuntime(workerData)
  parentPort.on("message", async (url) => {
    let report
    try {
      const mod = await import(url)
      const app = mod.default ?? mod.app
      report = { loaded: true, exported: app !== null && typeof app === "object" }
    } catch (e) {
      report = { loaded: false, thrown: plain(e) }
    }
    // One turn of the timers first: a rejection the app left unhandled, or a throw in a timer it set for "now",
    // ends this thread here (the parent hears "error") instead of the server after its own import.
    await new Promise((resolve) => setTimeout(resolve, 0))
    parentPort.postMessage(report)
    collect()
  })
  parentPort.postMessage({ ready: true })
})().catch((e) => parentPort.postMessage({ broken: plain(e) }))
`

/** A worker, warming or ready, with what it printed since its last load began. */
interface ProbeWorker {
  readonly worker: Worker
  /** Resolves once the worker is ready; rejects with why it could not start. */
  readonly ready: Promise<void>
  readonly alive: () => boolean
  output: string
  loaded: number
}

const warm = (loader: RegisteredAppLoader): ProbeWorker => {
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: runtimeData(loader.runtime, loader),
    stdout: true,
    stderr: true
  })
  let alive = true
  worker.once("exit", () => void (alive = false))
  const probe: ProbeWorker = {
    worker,
    alive: () => alive,
    output: "",
    loaded: 0,
    ready: new Promise<void>((resolve, reject) => {
      const onMessage = (report: Report) => {
        if ("ready" in report) resolve()
        else if ("broken" in report) reject(new Error(report.broken.message))
        else return
        worker.off("message", onMessage)
      }
      worker.on("message", onMessage)
      worker.once("error", reject)
      worker.once("exit", (code) => reject(new Error(`it exited (code ${code})`)))
    })
  }
  // Awaited by the load that takes it; until then a failure is kept for it, not an unhandled rejection.
  probe.ready.catch(() => undefined)
  const keep = (chunk: Buffer) => void (probe.output = (probe.output + chunk.toString()).slice(-OUTPUT_KEPT))
  worker.stdout.on("data", keep)
  worker.stderr.on("data", keep)
  return probe
}

/** How an import in the worker ended: settled (loaded or thrown), the thread's own end, or the time limit. */
type Outcome =
  | Settled
  | { readonly exited: number }
  | { readonly uncaught: Thrown }
  | { readonly timedOut: true; readonly busy: boolean }

/**
 * Sends `url` to the ready worker and waits for its import to settle, for `timeoutMs` at most. At the limit the
 * worker's event-loop use over the second half tells a loop (busy throughout) from an await (idle, waiting).
 */
const importIn = (worker: Worker, url: string, timeoutMs: number) =>
  Effect.async<Outcome>((resume) => {
    let midway: ReturnType<Worker["performance"]["eventLoopUtilization"]> | undefined
    const half = setTimeout(() => void (midway = worker.performance.eventLoopUtilization()), timeoutMs / 2)
    const limit = setTimeout(() => {
      const busy = worker.performance.eventLoopUtilization(midway).utilization > 0.5
      settle({ timedOut: true, busy })
    }, timeoutMs)
    const onMessage = (report: Report) => void ("loaded" in report && settle(report))
    const onError = (e: Error) => settle({ uncaught: { message: e.message, stack: e.stack } })
    const onExit = (code: number) => settle({ exited: code })
    // The worker outlives this load: its listeners go when the load ends, however it ends.
    const stop = () => {
      clearTimeout(half)
      clearTimeout(limit)
      worker.off("message", onMessage).off("error", onError).off("exit", onExit)
    }
    const settle = (outcome: Outcome) => {
      stop()
      resume(Effect.succeed(outcome))
    }
    worker.on("message", onMessage).on("error", onError).on("exit", onExit)
    worker.postMessage(url)
    return Effect.sync(stop)
  })

/** Why a version did not load, as the line `wo dev` prints; undefined when it loaded and exported an app. */
const failure = (file: string, outcome: Outcome, timeoutMs: number): string | undefined => {
  if ("loaded" in outcome) {
    if (!outcome.loaded) return cannotLoad(file, path.dirname(file), outcome.thrown)
    return outcome.exported ? undefined : noExport(file)
  }
  if ("exited" in outcome) return `${file} ended its process while loading (process.exit(${outcome.exited}))`
  if ("uncaught" in outcome) return `${file} threw while loading, outside its import (an unhandled rejection, or a throw in a timer): ${outcome.uncaught.message}${whereInApp(path.dirname(file), outcome.uncaught.stack ?? "")}`
  return `${file} did not finish loading within ${timeoutMs} ms (WO_DEV_LOAD_TIMEOUT_MS): ` + (outcome.busy
    ? "it kept running all along (an endless loop at import?)"
    : "it kept waiting for something that never came (a top-level await that never settles?)")
}

/** What the app printed while loading, after the reason (the app's own logs often say where it stopped). */
const printed = (output: string) => (output.trim() === "" ? "" : `\nwhat it printed while loading:\n${output.trimEnd()}`)

export interface LoadProbe {
  /** Loads the app's entry `file` under the version tag `tag` in the worker: succeeds if it loaded in time. */
  readonly load: (file: string, tag: string) => Effect.Effect<void, AppLoadError>
}

/**
 * The probe, its first worker warming at once; the worker is stopped when the scope closes. Without a registered
 * app loader (the runtime embedded in a program that loads apps its own way) there is nothing to load with, and
 * versions go straight to the server's import.
 */
export const makeLoadProbe = (timeoutMs: number) =>
  Effect.gen(function* () {
    const loader = registeredAppLoader()
    if (loader === undefined) return { load: () => Effect.void } satisfies LoadProbe
    let current = warm(loader)
    yield* Effect.addFinalizer(() => Effect.promise(() => current.worker.terminate()))
    const replace = (w: ProbeWorker) =>
      Effect.promise(() => w.worker.terminate()).pipe(Effect.zipRight(Effect.sync(() => void (current = warm(loader)))))

    const loadIn = (w: ProbeWorker, file: string, tag: string) =>
      Effect.gen(function* () {
        const started = yield* Effect.tryPromise({ try: () => w.ready, catch: (e) => e as Error }).pipe(
          Effect.timeoutFail({ duration: Math.max(STARTUP_BOUND_MS, timeoutMs), onTimeout: () => new Error("it was still starting") }),
          Effect.either
        )
        if (started._tag === "Left") {
          return yield* new AppLoadError({ message: `the worker that loads the app did not start: ${started.left.message}${printed(w.output)}` })
        }
        w.output = ""
        const outcome = yield* importIn(w.worker, versionUrl(file, path.dirname(file), tag), timeoutMs)
        const message = failure(file, outcome, timeoutMs)
        if (message !== undefined) return yield* new AppLoadError({ message: message + printed(w.output) })
        w.loaded++
      })

    const load = (file: string, tag: string) =>
      Effect.gen(function* () {
        // A worker that ended while idle (a timer of an earlier version calling process.exit) is replaced first.
        if (!current.alive()) yield* replace(current)
        const w = current
        yield* loadIn(w, file, tag).pipe(Effect.onExit((exit) => (exit._tag === "Failure" || w.loaded >= RECYCLE_AFTER ? replace(w) : Effect.void)))
      })
    return { load } satisfies LoadProbe
  })
