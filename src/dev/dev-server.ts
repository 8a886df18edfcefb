/**
 * `wo dev <app-dir>`: serves the app as `wo run` does, and swaps in its new catalog whenever the app folder changes.
 *
 * One edge listens throughout. Behind it runs one generation per catalog: the store, the writer, the projections
 * and the routes, exactly `wo run`'s (runtime.ts, server.ts). The current generation is the one seam every request
 * goes through (`current`), read once per request behind the gate (request-gate.ts).
 *
 * A reload, step by step:
 *  1. load the saved version in a worker thread first, within a time limit (load-probe.ts: an endless loop,
 *     `process.exit` or an await that never settles at import fails the reload there, not the server); once it
 *     loaded there, import it here (load-app.ts tags its modules with the version, app-version.ts) and compile it,
 *     serving on meanwhile;
 *  2. hold new requests and let those in flight finish: every write they made is acknowledged by the old writer;
 *  3. check the stored rows against the new app, as startup does (recovery.ts, read-only; no write is in flight);
 *  4. the old generation's streams announce the change (tools and resources list_changed), then close (a legacy
 *     client resumes its GET stream with Last-Event-ID; a listener gets its graceful result and may listen again);
 *  5. close the old generation (its writer flushes, the store closes) and start the new one on the same data dir
 *     (views whose declaration changed are folded again there);
 *  6. let the held requests on, to the new catalog.
 * A failure in 1 or 3 keeps the old generation serving untouched (3 releases the held requests to it), and is
 * printed as startup prints it; the next save is tried afresh. A failure in 5 (a view's evolve throwing on old
 * events, say) starts the old app again. `wo dev` serves the embedded store only (no --store): a swap reopens its
 * data dir. After each reload a full garbage collection returns the old generation's memory (collect-garbage.ts).
 */
import { Console, Context, Effect, Exit, Layer, Scope, Stream } from "effect"
import type { AppDef } from "../domain/catalog.ts"
import { Catalog } from "../domain/app-catalog.ts"
import { compileApp, type CompiledApp } from "../domain/compile.ts"
import { exitWhenTheWriterDies } from "../commands/writer-watch.ts"
import type { Settings } from "../support/config.ts"
import { startEdge, type EdgeHandler } from "../http/edge/edge.ts"
import { makeAppHandler } from "../http/server.ts"
import { OpenStreams, type OpenStreamsShape } from "../http/streams/open-streams.ts"
import { AppLoadError, appFile, loadApp } from "../app-loading/load-app.ts"
import { makeClassicLevelLog } from "../log/classic-level/classic-level-log.ts"
import { LevelDb } from "../log/classic-level/level-db.ts"
import { recoverRows } from "../projections/rows/recovery.ts"
import { Rows } from "../projections/rows/rows.ts"
import { upcastingLog } from "../log/upcasting-log.ts"
import { coreLayer } from "../runtime/runtime.ts"
import { announceServing, SHUTTING_DOWN } from "../runtime/announce.ts"
import { versionTag } from "./app-version.ts"
import { watchApp } from "./app-watcher.ts"
import { collectGarbage } from "./collect-garbage.ts"
import { makeLoadProbe, type LoadProbe } from "./load-probe.ts"
import { makeRequestGate } from "./request-gate.ts"

/** How long the folder must be quiet before a reload (an editor's save is several events). */
const QUIET_MS = 50

interface Generation {
  readonly app: AppDef
  readonly catalog: CompiledApp
  readonly handler: EdgeHandler<never>
  readonly streams: OpenStreamsShape
  /** Ends the generation's streams and console tails (as `wo run`'s shutdown does). */
  readonly onShutdown: Effect.Effect<void>
  readonly context: Context.Context<LevelDb | Rows>
  readonly scope: Scope.CloseableScope
}

/** Starts `wo run`'s runtime for `app`, minus the edge, in a scope of its own. */
const startGeneration = (app: AppDef, settings: Settings) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    return yield* Effect.gen(function* () {
      const context = yield* Layer.buildWithScope(exitWhenTheWriterDies.pipe(Layer.provideMerge(coreLayer(app, settings))), scope)
      const made = yield* makeAppHandler.pipe(Effect.provide(context), Scope.extend(scope))
      return {
        app,
        catalog: Context.get(context, Catalog),
        handler: made.handler as EdgeHandler<never>,
        streams: Context.get(context, OpenStreams),
        onShutdown: made.onShutdown,
        context,
        scope
      } satisfies Generation
    }).pipe(Effect.onError(() => Scope.close(scope, Exit.void)))
  })

/**
 * Loads and compiles the saved version, nothing served changing meanwhile: in a worker first (unless this version
 * was imported here already, and so runs no code again), then here, both within the time limit.
 */
const prepare = (dir: string, settings: Settings, probe: LoadProbe, imported: Set<string>) =>
  Effect.gen(function* () {
    const file = appFile(dir)
    if (file === undefined) return yield* new AppLoadError({ message: `no app.ts in ${dir}` })
    const tag = versionTag(dir, settings.dataDir)
    if (!imported.has(tag)) {
      yield* probe.load(file, tag)
      // Saved again while it loaded: what loaded in the worker is not what would be imported here. The watcher
      // has seen that save too, and the next reload takes it.
      if (versionTag(dir, settings.dataDir) !== tag) return yield* new AppLoadError({ message: `${file} changed while it loaded; loading the newer version next` })
    }
    const { app } = yield* loadApp(dir, tag).pipe(Effect.timeoutFail({
      duration: settings.devLoadTimeoutMs,
      onTimeout: () => new AppLoadError({ message: `${file} loaded in the worker but did not finish loading here within ${settings.devLoadTimeoutMs} ms (WO_DEV_LOAD_TIMEOUT_MS)` })
    }))
    imported.add(tag)
    return { app, catalog: yield* compileApp(app) }
  })

/**
 * The startup check of the stored rows against the new catalog (recovery.ts), read-only, on the current store.
 * Run while requests are held: with no write in flight, the store and its acknowledged head agree.
 */
const checkStoredRows = (current: Generation, catalog: CompiledApp) =>
  Effect.scoped(Effect.flatMap(makeClassicLevelLog(Context.get(current.context, LevelDb)), (log) =>
    recoverRows(upcastingLog(log, catalog), catalog)))

export interface DevServer {
  readonly url: string
}

/** Serves `dir`'s app on `settings` and reloads it on every change, until the scope closes. */
export const devServer = (dir: string, app: AppDef, settings: Settings) =>
  Effect.gen(function* () {
    const reloading = { ...settings, catalogReloads: true }
    const gate = yield* makeRequestGate
    let current = yield* startGeneration(app, reloading)
    // Closed after the edge (finalizers run in reverse): the edge drains its requests into this generation first.
    yield* Effect.addFinalizer(() => Scope.close(current.scope, Exit.void))
    // Watching from before the announcement: a save made as soon as the server says it serves is seen.
    const changes = yield* watchApp(dir, { quietMs: QUIET_MS, dataDir: settings.dataDir })
    const edge = yield* startEdge((request) => gate.pass(Effect.suspend(() => current.handler(request))), {
      ...reloading,
      onShutdown: Effect.suspend(() => current.onShutdown)
    })
    const announce = (g: Generation) => announceServing(edge.url, g.catalog, Context.get(g.context, Rows).recovered)
    yield* announce(current)
    yield* Effect.addFinalizer(() => Effect.logInfo(SHUTTING_DOWN))
    const probe = yield* makeLoadProbe(settings.devLoadTimeoutMs)
    const imported = new Set<string>()
    yield* Effect.logInfo(`wo dev: watching ${dir} for changes`)

    const reload = Effect.gen(function* () {
      const started = Date.now()
      const refuse = (e: { readonly message: string }) =>
        Console.error(`wo dev: the app did not reload; still serving the previous one.\nwo: ${e.message}`)
      const next = yield* prepare(dir, settings, probe, imported).pipe(Effect.either)
      if (next._tag === "Left") return yield* refuse(next.left)
      yield* gate.hold
      const checked = yield* checkStoredRows(current, next.right.catalog).pipe(Effect.either)
      if (checked._tag === "Left") return yield* Effect.zipRight(gate.release, refuse(checked.left))
      const old = current
      old.streams.announceCatalogChange()
      yield* old.onShutdown
      yield* Scope.close(old.scope, Exit.void)
      const swapped = yield* startGeneration(next.right.app, reloading).pipe(Effect.either)
      if (swapped._tag === "Left") {
        yield* Console.error(`wo dev: the app did not start; starting the previous one again.\nwo: ${swapped.left.message}`)
        current = yield* startGeneration(old.app, reloading).pipe(Effect.orDie)
      } else {
        current = swapped.right
      }
      yield* gate.release
      if (swapped._tag === "Right") {
        yield* announce(current)
        yield* Effect.logInfo(`wo dev: reloaded in ${Date.now() - started} ms`)
      }
    })
    yield* changes.pipe(
      Stream.runForEach(() => Effect.ensuring(reload, Effect.sync(collectGarbage))),
      Effect.forkScoped
    )
    return { url: edge.url } satisfies DevServer
  })
