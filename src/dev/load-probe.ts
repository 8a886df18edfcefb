/**
 * `wo dev` loads each saved version of the app in a worker thread first, and the server imports it only once it
 * loaded there, within a time limit. An app's code runs when it is imported, and in the server's own thread an
 * endless loop would stop every request, `process.exit` would end the server, and a top-level await that never
 * settles would hold the reload (and every later save) forever. In a worker, each of these fails only that reload:
 * `process.exit` ends the worker alone, and a worker still loading at the limit is stopped (terminate interrupts
 * even a loop that never yields).
 *
 * The worker only proves that the version loads: the catalog holds functions (methods, decide, evolve), which cannot
 * cross threads, so the server then imports the version itself. An app whose import behaves differently the second
 * time (a loop only now and then) is not caught; the server's import is still bounded in time, so a second
 * import that never settles fails the reload too.
 *
 * One warmed worker waits for the next save (the loader registered, the runtime preloaded), so that a reload pays
 * for the app's own import only. Each worker loads one version and is then stopped: its memory goes with it.
 */
import { Effect } from "effect"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { Worker } from "node:worker_threads"
import { registeredAppLoader, type RegisteredAppLoader } from "../app-loader.ts"
import { AppLoadError, cannotLoad, noExport, type Thrown } from "../load-app.ts"

/** The app's import in the worker settled: it loaded (and exported an app, or not), or it threw. */
type Settled =
  | { readonly loaded: true; readonly exported: boolean }
  | { readonly loaded: false; readonly thrown: Thrown }

/** What a worker posts: warmed; the app's import settled; or its own start failed. */
type Report = { readonly ready: true } | Settled | { readonly broken: Thrown }

/**
 * The worker's program, plain JavaScript (it runs before any loader is registered in its thread): register the
 * loader as the server did, preload the runtime, say so, then import the one file it is sent.
 */
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads")
const plain = (e) => e instanceof Error ? { message: e.message, stack: e.stack, code: e.code } : { message: String(e) }
// Alive until stopped: a top-level await that never settles must time out, not end the thread as if it had loaded.
setInterval(() => {}, 1 << 30)
;(async () => {
  const { register } = await import(workerData.tsx)
  register()
  const { registerAppLoader } = await import(workerData.loader)
  registerAppLoader({ ...workerData.options, tsx: false })
  await import(workerData.runtime).catch(() => undefined)
  parentPort.once("message", async (url) => {
    try {
      const mod = await import(url)
      const app = mod.default ?? mod.app
      parentPort.postMessage({ loaded: true, exported: app !== null && typeof app === "object" })
    } catch (e) {
      parentPort.postMessage({ loaded: false, thrown: plain(e) })
    }
  })
  parentPort.postMessage({ ready: true })
})().catch((e) => parentPort.postMessage({ broken: plain(e) }))
`

/** A worker on its way to ready, with what it printed so far (shown when its load fails). */
interface Warming {
  readonly worker: Worker
  readonly output: () => string
  /** Resolves once the worker is ready; rejects with why it could not start. */
  readonly ready: Promise<void>
}

const OUTPUT_KEPT = 16 * 1024

const warm = (loader: RegisteredAppLoader): Warming => {
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: { tsx: loader.tsx, loader: loader.loader, options: loader.options, runtime: loader.runtime },
    stdout: true,
    stderr: true
  })
  let output = ""
  const keep = (chunk: Buffer) => void (output = (output + chunk.toString()).slice(-OUTPUT_KEPT))
  worker.stdout.on("data", keep)
  worker.stderr.on("data", keep)
  let onMessage: (report: Report) => void = () => undefined
  const ready = new Promise<void>((resolve, reject) => {
    onMessage = (report) => {
      if ("ready" in report) resolve()
      else if ("broken" in report) reject(new Error(report.broken.message))
    }
    worker.on("message", onMessage)
    worker.once("error", reject)
    worker.once("exit", (code) => reject(new Error(`it exited (code ${code})`)))
  })
  // Awaited by the load that takes it; until then a failure is kept for it, not an unhandled rejection.
  ready.then(() => worker.off("message", onMessage), () => undefined)
  return { worker, output: () => output, ready }
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
      resume(Effect.succeed({ timedOut: true, busy }))
    }, timeoutMs)
    worker.on("message", (report: Report) => void ("loaded" in report && resume(Effect.succeed(report))))
    worker.once("error", (e) => resume(Effect.succeed({ uncaught: { message: e.message, stack: e.stack } })))
    worker.once("exit", (code) => resume(Effect.succeed({ exited: code })))
    worker.postMessage(url)
    return Effect.sync(() => {
      clearTimeout(half)
      clearTimeout(limit)
    })
  })

/** Why a version did not load, as the line `wo dev` prints. */
const failure = (file: string, outcome: Outcome, timeoutMs: number): string | undefined => {
  const dir = path.dirname(file)
  if ("loaded" in outcome) return outcome.loaded ? (outcome.exported ? undefined : noExport(file)) : cannotLoad(file, dir, outcome.thrown)
  if ("exited" in outcome) return `${file} ended its process while loading (process.exit(${outcome.exited}))`
  if ("uncaught" in outcome) return `${file} threw while loading, outside its import: ${outcome.uncaught.message}`
  return `${file} did not finish loading within ${timeoutMs} ms (WO_DEV_LOAD_TIMEOUT_MS): ` + (outcome.busy
    ? "it kept running all along (an endless loop at import?)"
    : "it kept waiting for something that never came (a top-level await that never settles?)")
}

export interface LoadProbe {
  /** Loads `file` (the app's entry) in a fresh worker: succeeds if it loaded and exported an app in time. */
  readonly load: (file: string) => Effect.Effect<void, AppLoadError>
}

/** The probe, with a worker warming for the first save; the waiting worker is stopped when the scope closes. */
export const makeLoadProbe = (timeoutMs: number) =>
  Effect.gen(function* () {
    const loader = registeredAppLoader()
    let spare: Warming | undefined
    const take = () => {
      const taken = spare ?? warm(loader!)
      spare = undefined
      return taken
    }
    yield* Effect.addFinalizer(() => Effect.promise(async () => void (await spare?.worker.terminate())))
    const load = (file: string): Effect.Effect<void, AppLoadError> => {
      // No loader in this process (the runtime embedded in a program that loads its own apps): nothing to load with.
      if (loader === undefined) return Effect.void
      return Effect.acquireUseRelease(
        Effect.sync(take),
        (w) =>
          Effect.gen(function* () {
            const started = yield* Effect.tryPromise({ try: () => w.ready, catch: (e) => e as Error }).pipe(Effect.either)
            if (started._tag === "Left") {
              return yield* new AppLoadError({ message: `the worker that loads the app did not start: ${started.left.message}${shown(w.output())}` })
            }
            const outcome = yield* importIn(w.worker, pathToFileURL(file).href, timeoutMs)
            const message = failure(file, outcome, timeoutMs)
            if (message !== undefined) return yield* new AppLoadError({ message: message + shown(w.output()) })
          }),
        // The next save's worker warms while this version is swapped in.
        (w) => Effect.promise(async () => void (await w.worker.terminate())).pipe(Effect.zipRight(Effect.sync(() => void (spare ??= warm(loader)))))
      )
    }
    if (loader !== undefined) spare = warm(loader)
    return { load } satisfies LoadProbe
  })

/** What the app printed while loading, after the reason (the app's own logs often say where it stopped). */
const shown = (output: string) => (output.trim() === "" ? "" : `\nwhat it printed while loading:\n${output.trimEnd()}`)
