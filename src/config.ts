/**
 * Runtime settings, read through Effect `Config` (environment variables by default). Every knob has a sane
 * default and is listed in the README.
 */
import { Config, ConfigError, Context, Effect, Either, Layer, Option } from "effect"

export interface Settings {
  /** Where to listen. `WO_LISTEN`, default 127.0.0.1:8080 (loopback: see the MCP DNS-rebinding rules). */
  readonly host: string
  readonly port: number
  /** The data directory. `WO_DATA`, default `<app-dir>/.data`. */
  readonly dataDir: string
  /** `WO_GROUP_COMMIT=off` writes one fsync per command instead of one per batch. */
  readonly groupCommit: boolean
  /**
   * `WO_ACKED_RECORD=off` stops keeping the acknowledged-head record beside the embedded store (for the bench's
   * comparison only: without it, a write-ahead log that loses acknowledged writes goes unseen).
   */
  readonly ackedRecord: boolean
  /** Most commands in one durable batch. `WO_MAX_BATCH`, default 1024. */
  readonly maxBatch: number
  /** Largest accepted request body in bytes. `WO_BODY_LIMIT`, default 4 MiB. */
  readonly bodyLimit: number
  /** Page size bounds for list endpoints and tools. */
  readonly defaultPageSize: number
  readonly maxPageSize: number
  /** Extra allowed Origins for /mcp, comma-separated (`WO_MCP_ORIGINS`); localhost origins are always allowed. */
  readonly mcpOrigins: ReadonlyArray<string>
  /** Extra Host names accepted besides loopback names (`WO_HOSTS`). */
  readonly allowedHosts: ReadonlyArray<string>
  /** Milliseconds a client may take to send a whole request (`WO_REQUEST_TIMEOUT_MS`, default 30000). */
  readonly requestTimeoutMs: number
  /** Most live legacy sessions (`WO_MAX_SESSIONS`, default 10000); past it, initialize gets 503. */
  readonly maxSessions: number
  /** A session unused this long is expired (`WO_SESSION_IDLE_MS`, default 30 minutes). */
  readonly sessionIdleMs: number
  /** Notifications buffered per stream before a slow reader's stream is closed (`WO_STREAM_BUFFER`, default 1024, at least a full write batch). */
  readonly streamBuffer: number
  /** Idle SSE streams get a comment this often (`WO_HEARTBEAT_MS`, default 15000). */
  readonly heartbeatMs: number
  /** Most resource subscriptions per session or listen stream (`WO_MAX_SUBSCRIPTIONS`, default 1000). */
  readonly maxSubscriptions: number
  /** Longest resource or live-query URI, in UTF-8 bytes (`WO_MAX_URI_LENGTH`, default 2048); -32602 past it. */
  readonly maxUriLength: number
  /** Most bytes of URIs one session or listen stream may subscribe to in all (`WO_MAX_SUBSCRIPTION_BYTES`, default 1 MiB). */
  readonly maxSubscriptionBytes: number
  /** Deepest JSON nesting accepted in a body (`WO_MAX_JSON_DEPTH`, default 64). */
  readonly maxJsonDepth: number
  /** Most open subscriptions/listen streams per client address (`WO_MAX_LISTENS_PER_CLIENT`, default 64). */
  readonly maxListensPerClient: number
  /** Most open subscriptions/listen streams in all (`WO_MAX_LISTEN_STREAMS`, default 10000). */
  readonly maxListenStreams: number
  /** Bytes all SSE streams together may hold for readers that do not keep up (`WO_STREAM_MEMORY`, default 64 MiB); past it the largest backlogs are closed first. */
  readonly streamMemory: number
  /** Most open `/api/_events` readers per client address (`WO_MAX_EVENT_TAILS_PER_CLIENT`, default 16). */
  readonly maxEventTailsPerClient: number
  /** Most open `/api/_events` readers in all (`WO_MAX_EVENT_TAILS`, default 128). */
  readonly maxEventTails: number
  /** Bearer token required on /mcp and /api (`WO_AUTH_TOKEN`); unset: no authentication. */
  readonly authToken?: string
  /** Allow a non-loopback listen address without a token (`--insecure`, `WO_INSECURE=1`). */
  readonly insecure: boolean
  /**
   * Serve a data dir although LevelDB dropped data while opening it (`--accept-data-loss`,
   * `WO_ACCEPT_DATA_LOSS=1`). Without it, such a dir is refused, naming what was dropped.
   */
  readonly acceptDataLoss: boolean
  /** When set (`WO_RECORD=<file>`), every HTTP exchange is appended to that transcript file. */
  readonly recordFile?: string
  /** Set by `wo dev`: the catalog may change while serving, so list changes are announced and nothing catalog-derived is cached. */
  readonly catalogReloads?: boolean
  /**
   * The event store (`--store`, `WO_STORE`): unset, the embedded classic-level log in the data dir; a
   * `postgres://user@host:port[,host:port...]/db` URL, the PostgreSQL log at its writable primary.
   */
  readonly store?: string
  /** Serve `GET /metrics` and count what the runtime does (`WO_METRICS=0|1`, default 1). Off: no counting at all. */
  readonly metrics: boolean
  /**
   * On a shared log (PostgreSQL), how many events this node's tailer may be behind the log's head while
   * `/readyz` still says ready (`WO_READY_MAX_LAG`, default 1000).
   */
  readonly readyMaxLag: number
  /**
   * How long an idempotency key, and the answer stored with it, is kept (`WO_IDEMPOTENCY_TTL`: seconds, or a
   * number with ms, s, m, h or d; default 24h). A retry within it gets the first answer; older keys are pruned.
   */
  readonly idempotencyTtlMs: number
}

export class WoConfig extends Context.Tag("writeonce/Config")<WoConfig, Settings>() {}

export const parseListen = (value: string): { host: string; port: number } | undefined => {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(value.trim())
  if (!m) return undefined
  const port = Number(m[2])
  return port <= 65535 ? { host: m[1].replace(/^\[|\]$/g, ""), port } : undefined
}

const list = (name: string) =>
  Config.string(name).pipe(
    Config.withDefault(""),
    Config.map((s) => s.split(",").map((x) => x.trim()).filter((x) => x.length > 0))
  )

const listenConfig = Config.string("WO_LISTEN").pipe(
  Config.withDefault("127.0.0.1:8080"),
  Config.mapOrFail((s) => {
    const parsed = parseListen(s)
    return parsed
      ? Either.right(parsed)
      : Either.left(ConfigError.InvalidData(["WO_LISTEN"], `expected HOST:PORT, got "${s}"`))
  })
)

const positiveInt = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: `${name} must be a positive integer`, validation: (n) => n > 0 })
  )

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `90` (seconds), `500ms`, `30s`, `15m`, `24h`, `7d` -> milliseconds; undefined when it is none of these. */
export const parseDurationMs = (value: string): number | undefined => {
  const m = /^(\d{1,12})\s*(ms|s|m|h|d)?$/.exec(value.trim())
  if (!m) return undefined
  const ms = Number(m[1]) * DURATION_UNITS[m[2] ?? "s"]
  return ms > 0 && Number.isSafeInteger(ms) ? ms : undefined
}

const durationMs = (name: string, fallback: string) =>
  Config.string(name).pipe(
    Config.withDefault(fallback),
    Config.mapOrFail((s) => {
      const ms = parseDurationMs(s)
      return ms !== undefined
        ? Either.right(ms)
        : Either.left(ConfigError.InvalidData([name], `expected a positive duration such as 24h, 30m, 90s or 500ms, got "${s}"`))
    })
  )

/** Reads the settings from Config; `overrides` (CLI flags) win over the environment. */
export const loadSettings = (defaults: { readonly dataDir: string }, overrides: Partial<Settings> = {}) =>
  Effect.gen(function* () {
    const listen = yield* listenConfig
    const settings: Settings = {
      host: listen.host,
      port: listen.port,
      dataDir: yield* Config.string("WO_DATA").pipe(Config.withDefault(defaults.dataDir)),
      groupCommit: yield* Config.string("WO_GROUP_COMMIT").pipe(
        Config.withDefault("on"),
        Config.map((s) => !["off", "0", "false", "no"].includes(s.toLowerCase()))
      ),
      ackedRecord: yield* Config.string("WO_ACKED_RECORD").pipe(
        Config.withDefault("on"),
        Config.map((s) => !["off", "0", "false", "no"].includes(s.toLowerCase()))
      ),
      maxBatch: yield* positiveInt("WO_MAX_BATCH", 1024),
      bodyLimit: yield* positiveInt("WO_BODY_LIMIT", 4 * 1024 * 1024),
      defaultPageSize: yield* positiveInt("WO_PAGE_SIZE", 50),
      maxPageSize: yield* positiveInt("WO_MAX_PAGE_SIZE", 1000),
      mcpOrigins: yield* list("WO_MCP_ORIGINS"),
      allowedHosts: yield* list("WO_HOSTS"),
      requestTimeoutMs: yield* positiveInt("WO_REQUEST_TIMEOUT_MS", 30_000),
      maxSessions: yield* positiveInt("WO_MAX_SESSIONS", 10_000),
      sessionIdleMs: yield* positiveInt("WO_SESSION_IDLE_MS", 30 * 60_000),
      streamBuffer: yield* positiveInt("WO_STREAM_BUFFER", 1024),
      heartbeatMs: yield* positiveInt("WO_HEARTBEAT_MS", 15_000),
      maxSubscriptions: yield* positiveInt("WO_MAX_SUBSCRIPTIONS", 1000),
      maxUriLength: yield* positiveInt("WO_MAX_URI_LENGTH", 2048),
      maxSubscriptionBytes: yield* positiveInt("WO_MAX_SUBSCRIPTION_BYTES", 1024 * 1024),
      maxJsonDepth: yield* positiveInt("WO_MAX_JSON_DEPTH", 64),
      maxListensPerClient: yield* positiveInt("WO_MAX_LISTENS_PER_CLIENT", 64),
      maxListenStreams: yield* positiveInt("WO_MAX_LISTEN_STREAMS", 10_000),
      streamMemory: yield* positiveInt("WO_STREAM_MEMORY", 64 * 1024 * 1024),
      maxEventTailsPerClient: yield* positiveInt("WO_MAX_EVENT_TAILS_PER_CLIENT", 16),
      maxEventTails: yield* positiveInt("WO_MAX_EVENT_TAILS", 128),
      authToken: yield* Config.string("WO_AUTH_TOKEN").pipe(Config.option, Config.map((o) => Option.getOrUndefined(Option.filter(o, (t) => t.length > 0)))),
      insecure: yield* Config.boolean("WO_INSECURE").pipe(Config.withDefault(false)),
      acceptDataLoss: yield* Config.boolean("WO_ACCEPT_DATA_LOSS").pipe(Config.withDefault(false)),
      recordFile: yield* Config.string("WO_RECORD").pipe(Config.option, Config.map(Option.getOrUndefined)),
      idempotencyTtlMs: yield* durationMs("WO_IDEMPOTENCY_TTL", "24h"),
      store: yield* Config.string("WO_STORE").pipe(Config.option, Config.map((o) => Option.getOrUndefined(Option.filter(o, (s) => s.trim().length > 0)))),
      metrics: yield* Config.string("WO_METRICS").pipe(
        Config.withDefault("1"),
        Config.map((s) => !["off", "0", "false", "no"].includes(s.toLowerCase()))
      ),
      readyMaxLag: yield* positiveInt("WO_READY_MAX_LAG", 1000)
    }
    return { ...settings, ...overrides }
  })

/** The settings as a layer, for composing the runtime. */
export const settingsLayer = (defaults: { readonly dataDir: string }, overrides: Partial<Settings> = {}) =>
  Layer.effect(WoConfig, loadSettings(defaults, overrides))
