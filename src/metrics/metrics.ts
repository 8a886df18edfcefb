/**
 * The runtime's metrics (`GET /metrics`, Prometheus text format), one prom-client registry per runtime (never
 * the global default one: several servers in one process keep their counts apart).
 *
 * Hot paths only bump plain numbers here (per command, per batch, per stream flush); prom-client reads them
 * when scraped (`collect`). Gauges (queue depth, open streams, sessions, stream memory, tailer lag) are read
 * at scrape time from the services that know them, registered with `gauge`. With `WO_METRICS=0` the service is
 * `MetricsOff`: every method does nothing and nothing is decorated.
 */
import { Context, Exit, Layer } from "effect"
import { Counter, Gauge, Histogram, Registry } from "prom-client"
import { isStoreError, STORE_UNAVAILABLE, storeErrorPolicy, type CommandError } from "../domain/errors.ts"

/**
 * Label values of `wo_refusals_total`: the error, and its code: a domain rejection's `reject(code, ...)`, or for
 * a store error (all `StoreUnavailable`) its cause, from STORE_ERRORS.
 */
const refusalLabels = (error: CommandError) =>
  isStoreError(error)
    ? { error: STORE_UNAVAILABLE, code: storeErrorPolicy(error).metric }
    : { error: error._tag, code: error._tag === "Rejected" ? error.code : "" }

export interface MetricsShape {
  readonly enabled: boolean
  /** The exposition (text format) and its content type. */
  readonly render: () => Promise<string>
  readonly contentType: string
  /** A command (single-row write or app command) was answered by the writer. */
  readonly answered: (exit: Exit.Exit<unknown, CommandError>) => void
  /** A durable write of `events` events, by type, took `seconds`; `ok` false when it failed. */
  readonly appended: (types: ReadonlyMap<string, number>, events: number, seconds: number, ok: boolean) => void
  /** Push-stream notifications: written to sockets, dropped (never written), streams closed (by reason). */
  readonly notified: (frames: number) => void
  readonly dropped: (frames: number) => void
  readonly streamClosed: (reason: string) => void
  /** Called when a delivery's frames are handed to the sockets: observes the lag from the last durable write. */
  readonly flushed: () => void
  /** `wo_idempotent_replays_total`: call `inc()` when a retried write is answered from its key's stored answer. */
  readonly idempotentReplays: { readonly inc: () => void }
  /** Tailer (shared log): it lost the log and follows again. */
  readonly tailerRestarted: () => void
  /** A gauge read at scrape time (a sync or async reading; undefined: not reported). */
  readonly gauge: (name: string, help: string, read: () => number | undefined | Promise<number | undefined>) => void
  /** A labelled gauge read at scrape time. */
  readonly gauges: (name: string, help: string, label: string, read: () => ReadonlyMap<string, number>) => void
  /** A counter whose total another service keeps (read at scrape time). */
  readonly counterOf: (name: string, help: string, read: () => number) => void
  /** A labelled counter whose totals another service keeps, each with its labels (read at scrape time). */
  readonly countersOf: (name: string, help: string, labelNames: ReadonlyArray<string>, read: () => Iterable<readonly [Readonly<Record<string, string>>, number]>) => void
}

export class Metrics extends Context.Tag("writeonce/Metrics")<Metrics, MetricsShape>() {}

const noop = () => {}

/** `WO_METRICS=0`: nothing counted, nothing exposed. */
export const metricsOff: MetricsShape = {
  enabled: false,
  render: () => Promise.resolve(""),
  contentType: "text/plain",
  answered: noop,
  appended: noop,
  notified: noop,
  dropped: noop,
  streamClosed: noop,
  flushed: noop,
  idempotentReplays: { inc: noop },
  tailerRestarted: noop,
  gauge: noop,
  gauges: noop,
  counterOf: noop,
  countersOf: noop
}

/** Seconds: from a fast fsync (tens of microseconds) to a stalled store. */
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
/** Events per durable batch, up to WO_MAX_BATCH's default and beyond (an app command adds several). */
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]

export const makeMetrics = (): MetricsShape => {
  const registry = new Registry()
  const registers = [registry]
  // Plain numbers bumped on hot paths, handed to prom-client at scrape time (hand-tuned: no label lookup per
  // command or per frame).
  let committed = 0
  let notified = 0
  let dropped = 0
  let replays = 0
  let tailerRestarts = 0
  let durableAt = 0
  let observedAt = 0

  /** A counter fed from a running total at scrape time. */
  const totalOf = (name: string, help: string, read: () => number) => {
    let reported = 0
    new Counter({
      name,
      help,
      registers,
      collect() {
        const now = read()
        if (now > reported) this.inc(now - reported)
        reported = now
      }
    })
  }

  totalOf("wo_commits_total", "Commands (single-row writes and app commands) acknowledged durable.", () => committed)
  const refusals = new Counter({
    name: "wo_refusals_total",
    help: "Commands the writer refused, by error (VersionConflict, NotFound, Rejected, MethodFailed, StoreUnavailable, ...) and, for Rejected, the domain code.",
    labelNames: ["error", "code"],
    registers
  })
  // Per batch: plain sums by outcome (and entity type), handed to prom-client at scrape time as the totals they are
  // (its label hashing per `inc` is most of `appended`'s cost: bench/profile-core.ts set_price).
  const OUTCOMES = ["written", "failed"] as const
  const batchTotals = { written: 0, failed: 0 }
  const eventTotals = { written: new Map<string, number>(), failed: new Map<string, number>() }
  new Counter({
    name: "wo_events_total",
    help: "Events in durable writes, by entity type and outcome (written, failed: the durable write failed).",
    labelNames: ["type", "outcome"],
    registers,
    collect() {
      this.reset()
      for (const outcome of OUTCOMES) for (const [type, n] of eventTotals[outcome]) this.inc({ type, outcome }, n)
    }
  })
  new Counter({
    name: "wo_batches_total",
    help: "Durable writes (group-commit batches), by outcome (written, failed).",
    labelNames: ["outcome"],
    registers,
    collect() {
      this.reset()
      for (const outcome of OUTCOMES) if (batchTotals[outcome] > 0) this.inc({ outcome }, batchTotals[outcome])
    }
  })
  const batchSize = new Histogram({ name: "wo_batch_events", help: "Events per durable write.", buckets: BATCH_BUCKETS, registers })
  const commitSeconds = new Histogram({
    name: "wo_commit_duration_seconds",
    help: "Time of one durable write (the log's append: write and fsync, or the PostgreSQL transaction with its standby).",
    buckets: LATENCY_BUCKETS,
    registers
  })
  totalOf("wo_notifications_sent_total", "Notification frames written to push streams (SSE).", () => notified)
  totalOf("wo_notifications_dropped_total", "Notification frames never written: their stream closed for overflow, memory, or the client leaving.", () => dropped)
  const closes = new Counter({
    name: "wo_streams_closed_total",
    help: "Push streams closed, by reason (overflow: a slow reader's buffer filled; memory: WO_STREAM_MEMORY; client, shutdown, ...).",
    labelNames: ["reason"],
    registers
  })
  const lag = new Histogram({
    name: "wo_notification_lag_seconds",
    help: "From a batch's durable write returning to its notifications being handed to the sockets.",
    buckets: LATENCY_BUCKETS,
    registers
  })
  totalOf("wo_idempotent_replays_total", "Retried writes answered from their idempotency key's stored answer.", () => replays)
  totalOf("wo_tailer_restarts_total", "Shared log: times the tailer lost the log (store unreachable, failover) and followed again.", () => tailerRestarts)

  return {
    enabled: true,
    render: () => registry.metrics(),
    contentType: registry.contentType,
    answered: (exit) => {
      if (exit._tag === "Success") committed++
      else if (exit.cause._tag === "Fail") refusals.inc(refusalLabels(exit.cause.error))
    },
    appended: (types, n, seconds, ok) => {
      const outcome = ok ? "written" : "failed"
      batchTotals[outcome]++
      const byType = eventTotals[outcome]
      for (const [type, count] of types) byType.set(type, (byType.get(type) ?? 0) + count)
      if (ok) {
        batchSize.observe(n)
        durableAt = performance.now()
      }
      commitSeconds.observe(seconds)
    },
    notified: (frames) => {
      notified += frames
    },
    dropped: (frames) => {
      dropped += frames
    },
    streamClosed: (reason) => closes.inc({ reason }),
    flushed: () => {
      if (durableAt > observedAt) {
        observedAt = durableAt
        lag.observe((performance.now() - durableAt) / 1000)
      }
    },
    idempotentReplays: {
      inc: () => {
        replays++
      }
    },
    tailerRestarted: () => {
      tailerRestarts++
    },
    gauge: (name, help, read) => {
      new Gauge({
        name,
        help,
        registers,
        async collect() {
          const value = await read()
          if (value === undefined) this.reset()
          else this.set(value)
        }
      })
    },
    gauges: (name, help, label, read) => {
      new Gauge({
        name,
        help,
        labelNames: [label],
        registers,
        collect() {
          this.reset()
          for (const [value, n] of read()) this.set({ [label]: value }, n)
        }
      })
    },
    counterOf: totalOf,
    countersOf: (name, help, labelNames, read) => {
      new Counter({
        name,
        help,
        labelNames: [...labelNames],
        registers,
        collect() {
          this.reset()
          for (const [labels, n] of read()) if (n > 0) this.inc(labels, n)
        }
      })
    }
  }
}

/** The metrics for these settings: counted (`WO_METRICS=1`, the default) or off. */
export const metricsLayer = (enabled: boolean) => Layer.sync(Metrics, () => (enabled ? makeMetrics() : metricsOff))
