/**
 * `GET /metrics`: the runtime's metrics in the Prometheus text format (behind the bearer token when one is
 * set: the router checks it). The gauges are registered here, each read at scrape time from the service that
 * knows it, so that serving them costs nothing between scrapes.
 */
import { Effect, Option } from "effect"
import { Access } from "../../access/access.ts"
import { PRINCIPAL_OUTCOMES } from "../../access/principal-activity.ts"
import { WriterStatus } from "../../commands/writer-status.ts"
import { EventLog } from "../../log/event-log.ts"
import { Metrics } from "../../metrics/metrics.ts"
import { CommitMode } from "../../commands/commit-mode.ts"
import { errorJson, type EdgeRequest, type EdgeResponse } from "../edge/edge-types.ts"
import { Sessions } from "../mcp/sessions.ts"
import { OpenStreams } from "../streams/open-streams.ts"
import type { StreamHub } from "../streams/stream-hub.ts"

export const METRICS_PATH = "/metrics"

export const makeMetricsRoute = Effect.gen(function* () {
  const metrics = yield* Metrics
  const writer = yield* WriterStatus
  const streams = yield* OpenStreams
  const sessions = yield* Sessions
  const mode = yield* CommitMode
  const log = yield* EventLog
  metrics.gauge("wo_writer_queue_depth", "Commands queued for the writer, not yet in a batch.", () => writer.queueDepth())
  metrics.gauges("wo_open_streams", "Open MCP streams, by kind (session: a legacy session's GET stream; listen: a modern subscriptions/listen).", "kind", () => {
    const byKind = new Map<string, number>([["session", 0], ["listen", 0]])
    for (const s of streams.list()) if (byKind.has(s.kind)) byKind.set(s.kind, byKind.get(s.kind)! + 1)
    return byKind
  })
  metrics.gauge("wo_push_streams", "Open push streams (SSE) of every kind.", () => streams.list().length)
  // A bounded label: principals are declared in the access file (none without one).
  metrics.gauges("wo_principal_streams", "Open push streams by principal (the access file's; against its streams limit).", "principal", () => {
    const byPrincipal = new Map<string, number>()
    for (const s of streams.list()) if (s.principal !== undefined) byPrincipal.set(s.principal.name, (byPrincipal.get(s.principal.name) ?? 0) + 1)
    return byPrincipal
  })
  const activity = (yield* Effect.serviceOption(Access)).pipe(Option.map((a) => a.activity), Option.getOrUndefined)
  if (activity !== undefined) {
    metrics.countersOf(
      "wo_principal_requests_total",
      "Requests by principal and outcome: admitted (past the edge's checks), forbidden (a grant missing: 403, at the edge or for a tool or resource inside MCP) or limited (over one of its limits: 429).",
      ["principal", "outcome"],
      function* () {
        for (const [principal, counts] of activity.totals()) for (const outcome of PRINCIPAL_OUTCOMES) yield [{ principal, outcome }, counts[outcome]] as const
      }
    )
  }
  metrics.gauge("wo_sessions", "Live legacy MCP sessions.", () => sessions.count())
  if (mode._tag === "Shared") {
    const tailer = mode.tailer
    metrics.gauge("wo_tailer_applied_seq", "Shared log: the last seq this node's rows include.", () => tailer.applied())
    metrics.gauge("wo_tailer_lag_events", "Shared log: how many events this node's tailer is behind the log's head (read at scrape time).", () =>
      Effect.runPromise(Effect.match(log.head, { onFailure: () => undefined, onSuccess: (head) => Math.max(0, head.lastSeq - tailer.applied()) })))
  }
  if (log.rowStore !== undefined) {
    metrics.counterOf(
      "wo_row_store_sync_reads_total",
      "PostgreSQL: reads of the store that blocked this node's thread: rows a command read that the writer had not read ahead of its decision (it reads up to 4 steps ahead), and MCP resources/list pages.",
      log.rowStore.syncReads
    )
  }
  if (log.failovers !== undefined) metrics.counterOf("wo_store_failovers_total", "PostgreSQL: times this node found another writable primary (a failover) since it started.", log.failovers)

  const route = (request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    if (request.method !== "GET") return Effect.succeed(errorJson(405, "MethodNotAllowed", "GET /metrics only", {}, { allow: "GET" }))
    if (!metrics.enabled) return Effect.succeed(errorJson(404, "NotFound", "metrics are off (WO_METRICS=0)"))
    return Effect.map(Effect.promise(metrics.render), (body): EdgeResponse => ({ _tag: "Buffered", status: 200, headers: { "content-type": metrics.contentType }, body }))
  }

  /** The push streams' gauges, once the edge (which owns them) is running. */
  const observeStreams = (hub: StreamHub) => {
    if (!metrics.enabled) return
    hub.observe(metrics)
    metrics.gauge("wo_stream_memory_bytes", "Bytes held for push-stream readers that do not keep up (against WO_STREAM_MEMORY).", () => hub.budget.stats().bytes)
  }
  return { route, observeStreams }
})
