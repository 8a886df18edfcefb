/**
 * A view folded again from the log in a worker thread of its own, at the lowest priority the system gives it
 * (support/thread-priority.ts). On the server's thread even a paced fold of a million events doubles the p99 of
 * the reads it shares the thread with; in a thread that runs only when a core is idle, they keep their latency
 * (bench/scenarios/view-refold.ts).
 *
 * The worker loads the app's module as the server did (app-loading/app-worker.ts) and folds
 * (fold-thread-worker.ts). On the embedded store it reads the events too, from the store the server lends it
 * (`lendToThread`): all of the fold's work, reading included, is then at the thread's priority (the server's thread
 * reading for it kept the p99 of reads at ~1.8 ms, against ~1 ms: bench/results/sections-stop56.md). On another
 * store the server's thread reads the events and sends them, no faster than the worker folds (at most WINDOW
 * messages ahead). At each bound it asks for the views' values: their JSON text, which the server decodes.
 *
 * The fold goes on on the server's thread, paced (view-fold.ts `makeViewFolder`), from the start, when the worker
 * cannot fold it: the app does not load or compile there, or declares a view differently, or the worker stops
 * midway (an evolve that ends its thread) or makes no progress for STALL while it gets little CPU (it waits, or
 * idle priority gets it none), or a read fails there (read again from the server's thread, which says why), or the
 * store reopens after a failed write (which ends the worker's handle first). The reason is logged.
 *
 * A worker that folds, keeps a core busy and makes no progress is given time while it runs, up to STUCK_MS of CPU
 * since its last step: past that its fold is stuck in the app's code (an evolve that never returns), which the
 * server's thread would meet too and never leave. The worker is then ended and its views fail, saying why: a view
 * with an older value keeps serving it, as when an evolve throws.
 */
import { Chunk, Data, Duration, Effect, Queue, Stream, type Scope } from "effect"
import { Worker } from "node:worker_threads"
import { LOAD_RUNTIME, runtimeData, runtimeModule, type AppModule } from "../../app-loading/app-worker.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import type { CompiledView } from "../../domain/compile-views.ts"
import { DataCorrupt, StoreFailed, type StoreError } from "../../domain/errors.ts"
import type { EventLogShape } from "../../log/event-log.ts"
import { viewDefinition } from "../../log/view-record.ts"
import type { FromFoldThread, ToFoldThread, WantedView } from "./fold-thread-worker.ts"
import { idleThread, THREAD_ID_EXPRESSION } from "../../support/thread-priority.ts"
import { threadCpuMs } from "../../support/thread-cpu.ts"
import { makeViewFolder, type FoldedView, type ViewFolder } from "./view-fold.ts"

/** Events per message to the worker (another store than the embedded one): a few hundred microseconds to read and send. */
const SEND = 128
/** Messages of events sent and not yet taken by the worker, at most. */
const WINDOW = 8
/**
 * The longest the worker may take to answer while it has work (its start, events not taken yet, the values): a
 * worker at idle priority on a machine whose cores are never idle, or one waiting on an import that never settles,
 * hands the fold to the server's thread. One that folds and keeps a core busy meanwhile is waited for (STUCK_MS).
 */
const STALL = Duration.seconds(10)
/** CPU a folding worker may use within STALL and still be waited for: it is working, not waiting or starved. */
const WORKING_MS = 1000
/**
 * CPU a folding worker may use since its last step before its fold counts as stuck in the app's code. A step: a
 * slice of the lent store it read (it says how far it is once a second of work), or a message of SEND events taken;
 * only an evolve of tens of milliseconds an event takes that long.
 */
const STUCK_MS = 10_000
/** What the worker printed, kept to explain why it stopped. */
const OUTPUT_KEPT = 4096

/** The worker's program: say its thread id, load the runtime and the app as the server did, then serve the fold. */
const PROGRAM = `
const { parentPort, workerData } = require("node:worker_threads")
parentPort.postMessage({ thread: ${THREAD_ID_EXPRESSION} })
${LOAD_RUNTIME}
;(async () => {
  await loadRuntime(workerData)
  const { serveFold } = await import(workerData.fold)
  const mod = await import(workerData.app)
  serveFold(parentPort, mod.default ?? mod.app, workerData.views)
})().catch((e) => parentPort.postMessage({ refused: "it could not load the app: " + (e instanceof Error ? e.message : String(e)) }))
`

/** The priority a fold thread runs at: idle (support/thread-priority.ts), or that of the server's own thread. */
export type ThreadPriority = "idle" | "normal"

/** The worker can no longer fold: the fold goes on on the server's thread. */
class ThreadGone extends Data.TaggedError("ThreadGone")<{ readonly why: string }> {}
/** The worker's fold runs in the app's code without ending: its views fail (the server's thread would hang too). */
class FoldStuck extends Data.TaggedError("FoldStuck")<{ readonly why: string }> {}

/** What the server's thread hears from the worker: its messages, or its end. */
type Heard = FromFoldThread | { readonly stopped: string }

/**
 * A folder of `views`, each from its initial value before seq 1, that folds in a worker thread loading `module`, at
 * `priority`: idle while each view serves an older value meanwhile (the fold takes only CPU nothing else wants);
 * normal when one is refused until the fold ends (then finishing soon matters more). The worker starts now (it
 * loads the app at that priority too), and is stopped when the scope closes.
 */
export const foldInThread = (
  module: AppModule,
  log: EventLogShape,
  catalog: CompiledApp,
  views: ReadonlyArray<CompiledView>,
  priority: ThreadPriority
): Effect.Effect<ViewFolder, never, Scope.Scope> =>
  Effect.gen(function* () {
    const names = views.map((v) => v.name).join(", ")
    const heard = yield* Queue.unbounded<Heard>()
    const wanted: ReadonlyArray<WantedView> = views.map((view) => ({ name: view.name, definition: viewDefinition(view) }))
    const worker = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new Worker(PROGRAM, {
          eval: true,
          workerData: { ...runtimeData(module.runtime, module.loader), fold: runtimeModule(module.runtime, "projections/views/fold-thread-worker"), app: module.url, views: wanted },
          stdout: true,
          stderr: true
        })),
      (w) => Effect.promise(() => w.terminate())
    )
    // It never keeps the process alive: the scope ends it.
    worker.unref()
    let output = ""
    const keep = (chunk: Buffer) => void (output = (output + chunk.toString()).slice(-OUTPUT_KEPT))
    worker.stdout.on("data", keep)
    worker.stderr.on("data", keep)
    const printed = () => (output.trim() === "" ? "" : `; it printed: ${output.trim()}`)
    worker.on("message", (m: FromFoldThread) => void Queue.unsafeOffer(heard, m))
    worker.on("error", (e) => void Queue.unsafeOffer(heard, { stopped: `it threw ${e.message}` }))
    worker.on("exit", (code) => void Queue.unsafeOffer(heard, { stopped: `it ended (exit code ${code})` }))

    // On the embedded store the worker reads the events itself, from the store lent to it; a reopen of the store
    // after a failed write ends the worker first (the fold then goes on here).
    let lentBack = false
    const loan = log.lendToThread === undefined ? undefined : yield* log.lendToThread(() => {
      lentBack = true
      return worker.terminate().then(() => undefined)
    })
    if (loan !== undefined) worker.postMessage({ loan } satisfies ToFoldThread)

    let fallback: ViewFolder | undefined
    let runsAt: string | undefined
    // The worker's Linux thread id, whether it is folding (loaded and ready), and its CPU time as the current wait
    // began (at its last message) and as its current window of STALL began.
    let threadId: number | null = null
    let folding = false
    let cpuAtHeard = 0
    let cpuAtWait = 0
    let stuck: string | undefined
    let position = 0
    let read = 0
    let inFlight = 0
    let folded = new Map<string, FoldedView>()
    const post = (message: ToFoldThread) => worker.postMessage(message)

    /**
     * The worker's next message. Its end, a refusal, or no message within STALL, fail as ThreadGone; a read that
     * failed there fails as that StoreError (the fold then goes on here); events taken free their place in the window.
     */
    const stalled = () =>
      new ThreadGone({ why: `it made no progress for ${Duration.format(STALL)}${runsAt === "idle priority" ? " at idle priority (no core was idle for it)" : ""}${printed()}` })
    const cpuNow = () => threadCpuMs(threadId) ?? 0
    /** No message within STALL: a folding worker that kept a core busy is waited for, up to STUCK_MS of CPU. */
    const afterStall: Effect.Effect<Heard, ThreadGone | FoldStuck> = Effect.suspend(() => {
      const now = cpuNow()
      const working = folding && now - cpuAtWait >= WORKING_MS
      cpuAtWait = now
      if (!working) return Effect.fail(stalled())
      if (now - cpuAtHeard < STUCK_MS) return next
      return Effect.fail(new FoldStuck({ why: `its fold in a worker thread ran ${Math.round((now - cpuAtHeard) / 1000)} s of CPU without finishing a step: an evolve that never returns? The fold is stopped` }))
    })
    const next: Effect.Effect<Heard, ThreadGone | FoldStuck> = Effect.flatten(
      Effect.timeoutTo(Queue.take(heard), { duration: STALL, onSuccess: Effect.succeed, onTimeout: () => afterStall })
    )
    // One reading of the thread's CPU per message: a wait begins as the last message was heard.
    const hear: Effect.Effect<FromFoldThread, ThreadGone | FoldStuck | StoreError> = Effect.flatMap(Effect.suspend(() => {
      cpuAtHeard = cpuAtWait = cpuNow()
      return next
    }), (m): Effect.Effect<FromFoldThread, ThreadGone | StoreError> => {
      if ("stopped" in m) return Effect.fail(new ThreadGone({ why: lentBack ? "the store reopened after a failed write, and ended it first" : `${m.stopped}${printed()}` }))
      if ("refused" in m) return Effect.fail(new ThreadGone({ why: `${m.refused}${printed()}` }))
      if ("failed" in m) {
        // Read again from the server's thread, which meets the same failure and says so where it always does.
        return Effect.zipRight(goOnHere(`a read failed there (${m.failed})`), Effect.fail(m.corrupt ? new DataCorrupt({ reason: m.failed }) : new StoreFailed({ reason: m.failed })))
      }
      if ("took" in m) inFlight--
      return Effect.succeed(m)
    })
    /** The worker's next message that is not events taken, nor how far it has read. */
    const answer: Effect.Effect<FromFoldThread, ThreadGone | FoldStuck | StoreError> = Effect.flatMap(hear, (m) => ("took" in m || "progress" in m ? answer : Effect.succeed(m)))
    const outOfTurn = (m: FromFoldThread) => new ThreadGone({ why: `it answered out of turn (${Object.keys(m).join(", ")})` })

    const goOnHere = (why: string) =>
      Effect.suspend(() => {
        if (fallback !== undefined) return Effect.void
        fallback = makeViewFolder(log, catalog, views.map((view) => ({ view, after: 0 })), true, true)
        return Effect.zipRight(
          Effect.promise(() => worker.terminate()),
          Effect.logWarning(`views ${names}: folding them again on the server's thread, paced, from the start: the worker thread cannot fold them: ${why}`)
        )
      })

    /** The worker's start: at `priority` (loading the app too: at idle, it is background work as well), then ready. */
    const started = Effect.suspend(() =>
      runsAt !== undefined ? Effect.void : Effect.gen(function* () {
        const first = yield* answer
        if (!("thread" in first)) return yield* outOfTurn(first)
        threadId = first.thread
        runsAt = priority === "idle" ? yield* idleThread(first.thread) : "normal priority"
        const ready = yield* answer
        if (!("ready" in ready)) return yield* outOfTurn(ready)
        folding = true
        yield* Effect.logInfo(`views ${names}: folding them again from the log in a worker thread, at ${runsAt}`)
      }))

    /** Sends a message of events, then waits while the worker has WINDOW of them still to take. */
    const send = (message: ToFoldThread): Effect.Effect<void, ThreadGone | FoldStuck | StoreError> =>
      Effect.suspend(() => {
        post(message)
        inFlight++
        return inFlight < WINDOW ? Effect.void : Effect.flatMap(hear, (m) => ("took" in m ? Effect.void : Effect.fail(outOfTurn(m))))
      })

    /** Sends the events after `from` up to `upTo` (the head when undefined); answers the bound they reach. */
    const sendLog = (from: number, upTo: number | undefined) => {
      let last = position
      const events = log.readFrom(from, { slice: SEND })
      const sending = Stream.runForEachChunk(upTo === undefined ? events : Stream.takeWhile(events, (e) => e.seq <= upTo), (chunk) => {
        const items = Chunk.toReadonlyArray(chunk)
        last = items[items.length - 1]!.seq
        return send({ events: items })
      })
      return Effect.map(sending, () => Math.max(last, upTo ?? last))
    }

    const inThread = (upTo: number | undefined) =>
      Effect.gen(function* () {
        yield* started
        if (loan !== undefined) post({ readTo: upTo ?? (yield* log.head).lastSeq })
        else post({ to: yield* sendLog(position + 1, upTo) })
        const values = yield* answer
        if (!("folded" in values)) return yield* outOfTurn(values)
        folded = new Map(values.folded.map((f) => [f.name, f.failed === undefined ? { valueJson: f.valueJson!, seq: f.seq } : { seq: f.seq, failed: f.failed }]))
        read = values.read
        position = values.to
        return position
      })

    /** The fold is stuck in the app's code: the worker is ended, and each view fails with why, at the last step. */
    const stopStuck = (why: string, upTo: number | undefined) =>
      Effect.zipRight(
        Effect.promise(() => worker.terminate()),
        Effect.sync(() => {
          stuck = why
          folded = new Map(views.map((view) => [view.name, { seq: position, failed: `view ${view.name}: ${why}` }]))
          return upTo ?? position
        })
      )

    const readTo = (upTo?: number): Effect.Effect<number, StoreError> =>
      Effect.suspend(() => {
        if (fallback !== undefined) return fallback.readTo(upTo)
        if (stuck !== undefined) return Effect.succeed(upTo ?? position)
        if (upTo !== undefined && upTo <= position) return Effect.succeed(position)
        return inThread(upTo).pipe(
          // A read that failed here leaves the worker ahead of `position`, with what was sent before the failure:
          // the fold goes on here, from the start, as it does after any failure there.
          Effect.tapError((e) => (e._tag === "ThreadGone" || e._tag === "FoldStuck" ? Effect.void : goOnHere(`the log could not be read (${e.reason})`))),
          Effect.catchTags({
            ThreadGone: (e) => Effect.zipRight(goOnHere(e.why), Effect.suspend(() => fallback!.readTo(upTo))),
            FoldStuck: (e) => stopStuck(e.why, upTo)
          })
        )
      })

    return {
      readTo,
      result: () => (fallback === undefined ? folded : fallback.result()),
      read: () => (fallback === undefined ? read : fallback.read()),
      place: () => (fallback === undefined ? `in a worker thread at ${runsAt}` : "on the server's thread")
    } satisfies ViewFolder
  })
