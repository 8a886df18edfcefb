/**
 * Liveness and readiness, for supervisors and load balancers. Open without the bearer token and without the
 * Host check (a load balancer probes by address); they say nothing about the data.
 *
 *  - `/livez` (and `/healthz`, kept as its alias for compatibility): the process is up and serving HTTP.
 *  - `/readyz`: ready to take traffic. The listener opens only once the store is recovered (runtime.ts builds the
 *    HTTP server last), so a node that answers has recovered. Beyond that: the writer is alive, the store is
 *    writable (the last durable write did not fail; after one failed, a small probe write must pass), the
 *    tailer has not found the shared log diverged, and on a shared log (PostgreSQL) the tailer is at most
 *    WO_READY_MAX_LAG events behind the log's head. Otherwise 503 `{"status":"not ready","reason":"..."}`.
 *
 * Cost: on the embedded store `/readyz` reads a few variables; only while the last write failed does it probe
 * the disk (at most once a second). On PostgreSQL it reads the log's head (one small query).
 */
import { Duration, Effect, Either } from "effect"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { WriterStatus } from "../../commands/writer-status.ts"
import { WoConfig } from "../../support/config.ts"
import { EventLog } from "../../log/event-log.ts"
import { WriteHealth } from "../../metrics/observed-log.ts"
import { CommitMode } from "../../commands/commit-mode.ts"
import { json, type EdgeRequest, type EdgeResponse } from "../edge/edge-types.ts"

const LIVE = json(200, { status: "ok" })
const READY = json(200, { status: "ready" })
const notReady = (reason: string) => json(503, { status: "not ready", reason }, { "cache-control": "no-store" })

/** The size of the probe file written after a failed durable write: larger than a typical batch's record. */
const PROBE_BYTES = 64 * 1024
/** At most one probe per interval; readiness answers from the last one in between. */
const PROBE_INTERVAL_MS = 1000
/** How long a readiness check may wait for the store. */
const STORE_TIMEOUT = Duration.seconds(2)

export const HEALTH_PATHS: ReadonlySet<string> = new Set(["/livez", "/healthz", "/readyz"])

/** Writes, fsyncs and removes a file in the data dir: whether the disk takes a write now. */
const probeDisk = (dataDir: string) =>
  Effect.tryPromise(async () => {
    const file = path.join(dataDir, ".wo-ready-probe")
    const handle = await fs.open(file, "w")
    try {
      await handle.writeFile(Buffer.alloc(PROBE_BYTES))
      await handle.sync()
    } finally {
      await handle.close()
      await fs.rm(file, { force: true })
    }
  })

export const makeHealthRoutes = Effect.gen(function* () {
  const settings = yield* WoConfig
  const writer = yield* WriterStatus
  const mode = yield* CommitMode
  const log = yield* EventLog
  const writes = yield* WriteHealth
  let writerDied = false
  let diverged = false
  yield* Effect.forkScoped(Effect.flatMap(writer.died, () => Effect.sync(() => void (writerDied = true))))
  if (mode._tag === "Shared") yield* Effect.forkScoped(Effect.flatMap(mode.tailer.diverged, () => Effect.sync(() => void (diverged = true))))

  // After a failed durable write: the store is writable again once a probe passes (or a write succeeds).
  let probedAt = 0
  const probe: Effect.Effect<void, unknown> = settings.store === undefined
    ? probeDisk(settings.dataDir)
    : Effect.asVoid(log.head) // PostgreSQL: the primary answers again (after a failover, a restart)
  const storeWritable = Effect.suspend(() => {
    const failure = writes.failure()
    if (failure === undefined) return Effect.succeed(true)
    if (Date.now() - probedAt < PROBE_INTERVAL_MS) return Effect.succeed(false)
    probedAt = Date.now()
    return Effect.map(Effect.either(Effect.timeout(probe, STORE_TIMEOUT)), (r) => {
      // Cleared only if no write failed again meanwhile.
      if (Either.isRight(r) && writes.failure() === failure) writes.record(undefined)
      return Either.isRight(r)
    })
  })

  const tailerLag = Effect.suspend(() =>
    mode._tag === "Shared"
      ? Effect.map(Effect.either(Effect.timeout(log.head, STORE_TIMEOUT)), (head) =>
        Either.isRight(head) ? Math.max(0, head.right.lastSeq - mode.tailer.applied()) : undefined)
      : Effect.succeed(0))

  const readiness: Effect.Effect<EdgeResponse> = Effect.gen(function* () {
    if (writerDied) return notReady("the writer stopped after an internal error; the server must be restarted")
    if (diverged) return notReady("this node applied a commit the shared log no longer has; it must be restarted")
    if (!(yield* storeWritable)) return notReady("the store is not writable: the last durable write failed (disk full, store unreachable)")
    const lag = yield* tailerLag
    if (lag === undefined) return notReady("the shared log's head cannot be read")
    if (lag > settings.readyMaxLag) return notReady(`this node is ${lag} events behind the shared log (more than WO_READY_MAX_LAG=${settings.readyMaxLag})`)
    return READY
  })

  return (request: EdgeRequest): Effect.Effect<EdgeResponse> =>
    request.path === "/readyz" ? readiness : Effect.succeed(LIVE)
})
