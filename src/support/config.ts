/**
 * Runtime settings, read through Effect `Config` (environment variables by default). Every knob has a sane
 * default and is listed in docs/operating.md ("Configuration").
 */
import { Config, ConfigError, Context, Effect, Either, Layer, Option } from "effect"
import { connectionCapsFor, fdLimit } from "./fd-limit.ts"

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
  /**
   * On PostgreSQL, while other nodes write too, how long the writer may hold a batch open for the callers its last
   * batch answered to write again (`WO_BATCH_LINGER_MS`, default 1; 0 never waits). Under load, batches about twice
   * as large: fewer round trips to the primary, and less work for the other nodes that follow the log. A lone caller
   * never waits, nor does a node no other node writes beside.
   */
  readonly batchLingerMs: number
  /**
   * Bytes of decoded rows kept in memory (`WO_ROW_CACHE`, default 64 MiB): the embedded store serves rows from
   * disk through an LRU cache of this size, so the data may be larger than memory; a PostgreSQL node reads its rows
   * from the store through it (projections/rows/cache-rows.ts).
   */
  readonly rowCache: number
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
  /**
   * The access file (`WO_ACCESS_FILE`, `--access FILE`): principals, their tokens and grants (src/access/). Re-read
   * on SIGHUP and when it changes; unset: `WO_AUTH_TOKEN` alone, or no authentication.
   */
  readonly accessFile?: string
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
  /**
   * On PostgreSQL, how long a statement or a durable write may wait for the primary before it fails with 503
   * (`WO_STORE_TIMEOUT`: seconds, or a number with ms, s, m, h or d; default 5s), and how long a write request waits
   * as a whole, from its arrival to its answer (group-commit.ts). A paused primary then fails writes instead of
   * holding them; reads of this node's rows go on.
   */
  readonly storeTimeoutMs: number
  /**
   * On PostgreSQL, how many events a node applies between two snapshots of its views (`WO_VIEW_SNAPSHOT_EVERY`,
   * default 10000; one is stored at shutdown too): the most a node starting later folds past the last snapshot.
   */
  readonly viewSnapshotEvery: number
  /**
   * A view folded again from a log of at least this many events is folded in a worker thread at idle priority
   * (`WO_REFOLD_THREAD_FROM`, default 20000), so that reads keep their latency; a shorter fold, paced on the
   * server's thread, costs less than starting the thread. Only for an app loaded from its folder (`wo run`,
   * `wo dev`): an app object embedded in a program has no module a thread could load.
   */
  readonly refoldThreadFrom: number
  /**
   * The priority of that thread while the views it folds serve an older value meanwhile (`WO_REFOLD_PRIORITY`):
   * `idle` (the default: it takes only CPU no other thread wants, and a thread that makes no progress for 10 s
   * hands the fold to the server's thread) or `normal` (as the server's threads: for a machine that is never idle).
   * A view refused until its fold ends is always folded at normal priority.
   */
  readonly refoldPriority: "idle" | "normal"
  /**
   * On PostgreSQL, how many ids of a type a node reserves at a time (`WO_ID_BLOCK`, default 100): it gives them to
   * its creates without asking the other nodes. A block a node never uses up (it stopped) is skipped.
   */
  readonly idBlock: number
  /**
   * Most open HTTP connections from one client address (`WO_MAX_CONNECTIONS_PER_CLIENT`; default half of
   * `maxConnections`); past it a new connection is closed at once, with a rate-limited warning.
   */
  readonly maxConnectionsPerClient: number
  /**
   * Most open HTTP connections in all (`WO_MAX_CONNECTIONS`; default the process's open-file limit less a quarter
   * of it, at least 64 and at most 1024 files, kept for the store and the rest). At it, the connection idle longest
   * is closed to make room for a new one; with none idle, the new one is closed.
   */
  readonly maxConnections: number
  /**
   * `wo dev`: how long a saved version of the app may take to load, in a worker, before that reload fails
   * (`WO_DEV_LOAD_TIMEOUT_MS`, default 10000). An endless loop or a top-level await that never settles then fails
   * the reload while the previous version serves on.
   */
  readonly devLoadTimeoutMs: number
  /**
   * OAuth resource-server mode is on when this is set (`WO_OAUTH_ISSUER`): bearer JWTs from this issuer are
   * accepted, and `oauthAudience` and `oauthJwks` are then required.
   */
  readonly oauthIssuer?: string
  /** The audiences a token must name one of (`WO_OAUTH_AUDIENCE`, comma-separated): this server's resource identifiers. */
  readonly oauthAudience?: ReadonlyArray<string>
  /** The issuer's signing keys (`WO_OAUTH_JWKS`): an http(s) URL of its JWKS, or the path of a JWKS file. */
  readonly oauthJwks?: string
  /** This server's resource identifier in its protected resource metadata (`WO_OAUTH_RESOURCE`); unset: from the request's Host. */
  readonly oauthResource?: string
}

/** The default of `viewSnapshotEvery` (WO_VIEW_SNAPSHOT_EVERY). */
export const VIEW_SNAPSHOT_EVERY = 10_000
/** The default of `refoldThreadFrom` (WO_REFOLD_THREAD_FROM). */
export const REFOLD_THREAD_FROM = 20_000
/** The default of `batchLingerMs` (WO_BATCH_LINGER_MS). */
export const BATCH_LINGER_MS = 1
/** The default of `idBlock` (WO_ID_BLOCK). */
export const ID_BLOCK = 100
/** WO_STORE_TIMEOUT's default: the bound on a wait for the shared store's primary. */
export const STORE_TIMEOUT_MS = 5000

export class WoConfig extends Context.Tag("writeonce/Config")<WoConfig, Settings>() {}

export const parseListen = (value: string): { host: string; port: number } | undefined => {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(value.trim())
  if (!m) return undefined
  const port = Number(m[2])
  return port <= 65535 ? { host: m[1].replace(/^\[|\]$/g, ""), port } : undefined
}

/**
 * Settings as a program or the command line gives them: any of `Settings`, and `listen: "HOST:PORT"` for `host`
 * and `port`. A key that is none of these is refused, not ignored.
 */
export type SettingsInput = Partial<Settings> & { readonly listen?: string }

const list = (name: string, fallback: ReadonlyArray<string>) =>
  Config.string(name).pipe(
    Config.option,
    Config.map(Option.match({
      onNone: () => fallback,
      onSome: (s) => s.split(",").map((x) => x.trim()).filter((x) => x.length > 0)
    }))
  )

const listenConfig = (fallback: string) =>
  Config.string("WO_LISTEN").pipe(
    Config.withDefault(fallback),
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

const nonNegativeInt = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: `${name} must be 0 or a positive integer`, validation: (n) => n >= 0 })
  )

/** `WO_GROUP_COMMIT=off` and the like: off, 0, false or no turn it off; anything else on. */
const onOff = (name: string, fallback: boolean) =>
  Config.string(name).pipe(
    Config.option,
    Config.map(Option.match({ onNone: () => fallback, onSome: (s) => !["off", "0", "false", "no"].includes(s.toLowerCase()) }))
  )

/** A string setting where empty means unset. */
const optionalString = (name: string, fallback: string | undefined) =>
  Config.string(name).pipe(
    Config.option,
    Config.map((o) => Option.getOrElse(Option.filter(o, (s) => s.trim().length > 0), () => fallback))
  )

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `90` (seconds), `500ms`, `30s`, `15m`, `24h`, `7d` -> milliseconds; undefined when it is none of these. */
export const parseDurationMs = (value: string): number | undefined => {
  const m = /^(\d{1,12})\s*(ms|s|m|h|d)?$/.exec(value.trim())
  if (!m) return undefined
  const ms = Number(m[1]) * DURATION_UNITS[m[2] ?? "s"]
  return ms > 0 && Number.isSafeInteger(ms) ? ms : undefined
}

const durationMs = (name: string, fallbackMs: number) =>
  Config.string(name).pipe(
    Config.option,
    Config.mapOrFail(Option.match({
      onNone: () => Either.right(fallbackMs),
      onSome: (s) => {
        const ms = parseDurationMs(s)
        return ms !== undefined
          ? Either.right(ms)
          : Either.left(ConfigError.InvalidData([name], `expected a positive duration such as 24h, 30m, 90s or 500ms, got "${s}"`))
      }
    }))
  )

/** WO_MAX_CONNECTIONS and WO_MAX_CONNECTIONS_PER_CLIENT; the defaults follow the open-file limit (src/support/fd-limit.ts). */
const connectionCaps = (d: Partial<Settings>) =>
  Effect.gen(function* () {
    const derived = (total?: number) => connectionCapsFor(fdLimit().limit, total)
    const maxConnections = yield* positiveInt("WO_MAX_CONNECTIONS", d.maxConnections ?? derived().total)
    const maxConnectionsPerClient = yield* positiveInt(
      "WO_MAX_CONNECTIONS_PER_CLIENT",
      d.maxConnectionsPerClient ?? derived(maxConnections).perClient
    )
    return { maxConnections, maxConnectionsPerClient }
  })

const isHttpUrl = (value: string) => {
  try {
    return ["http:", "https:"].includes(new URL(value).protocol)
  } catch {
    return false
  }
}

/**
 * WO_OAUTH_*: all absent (OAuth off), or the issuer with its audience and keys. A missing one, or one set without
 * the issuer, is a ConfigError naming it.
 */
const oauthConfig = (d: Partial<Settings>) =>
  Effect.gen(function* () {
    const oauthIssuer = yield* optionalString("WO_OAUTH_ISSUER", d.oauthIssuer)
    const audience = yield* list("WO_OAUTH_AUDIENCE", d.oauthAudience ?? [])
    const oauthAudience = audience.length > 0 ? audience : undefined
    const oauthJwks = yield* optionalString("WO_OAUTH_JWKS", d.oauthJwks)
    const oauthResource = yield* optionalString("WO_OAUTH_RESOURCE", d.oauthResource)
    const others = { WO_OAUTH_AUDIENCE: oauthAudience, WO_OAUTH_JWKS: oauthJwks, WO_OAUTH_RESOURCE: oauthResource }
    if (oauthIssuer === undefined) {
      const stray = Object.entries(others).find(([, v]) => v !== undefined)
      if (stray !== undefined) {
        return yield* Effect.fail(ConfigError.MissingData(["WO_OAUTH_ISSUER"], `${stray[0]} is set but WO_OAUTH_ISSUER is not: OAuth needs the issuer it trusts`))
      }
      return {}
    }
    const missing = (["WO_OAUTH_AUDIENCE", "WO_OAUTH_JWKS"] as const).filter((k) => others[k] === undefined)
    if (missing.length > 0) {
      return yield* Effect.fail(ConfigError.MissingData([missing[0]], `WO_OAUTH_ISSUER is set, so ${missing.join(" and ")} ${missing.length > 1 ? "are" : "is"} required too`))
    }
    for (const [name, value] of [["WO_OAUTH_ISSUER", oauthIssuer], ["WO_OAUTH_RESOURCE", oauthResource]] as const) {
      if (value !== undefined && !isHttpUrl(value)) {
        return yield* Effect.fail(ConfigError.InvalidData([name], `expected an http(s) URL, got "${value}"`))
      }
    }
    return { oauthIssuer, oauthAudience, oauthJwks, oauthResource }
  })

/** The settings the environment sets, each falling back to `d` and then to writeonce's default. */
const fromEnvironment = (d: Partial<Settings>) =>
  Effect.gen(function* () {
    const listen = yield* listenConfig(`${d.host ?? "127.0.0.1"}:${d.port ?? 8080}`)
    const settings: Settings = {
      host: listen.host,
      port: listen.port,
      dataDir: yield* Config.string("WO_DATA").pipe(Config.withDefault(d.dataDir ?? ".data")),
      groupCommit: yield* onOff("WO_GROUP_COMMIT", d.groupCommit ?? true),
      ackedRecord: yield* onOff("WO_ACKED_RECORD", d.ackedRecord ?? true),
      maxBatch: yield* positiveInt("WO_MAX_BATCH", d.maxBatch ?? 1024),
      batchLingerMs: yield* nonNegativeInt("WO_BATCH_LINGER_MS", d.batchLingerMs ?? BATCH_LINGER_MS),
      rowCache: yield* positiveInt("WO_ROW_CACHE", d.rowCache ?? 64 * 1024 * 1024),
      bodyLimit: yield* positiveInt("WO_BODY_LIMIT", d.bodyLimit ?? 4 * 1024 * 1024),
      defaultPageSize: yield* positiveInt("WO_PAGE_SIZE", d.defaultPageSize ?? 50),
      maxPageSize: yield* positiveInt("WO_MAX_PAGE_SIZE", d.maxPageSize ?? 1000),
      mcpOrigins: yield* list("WO_MCP_ORIGINS", d.mcpOrigins ?? []),
      allowedHosts: yield* list("WO_HOSTS", d.allowedHosts ?? []),
      requestTimeoutMs: yield* positiveInt("WO_REQUEST_TIMEOUT_MS", d.requestTimeoutMs ?? 30_000),
      maxSessions: yield* positiveInt("WO_MAX_SESSIONS", d.maxSessions ?? 10_000),
      sessionIdleMs: yield* positiveInt("WO_SESSION_IDLE_MS", d.sessionIdleMs ?? 30 * 60_000),
      streamBuffer: yield* positiveInt("WO_STREAM_BUFFER", d.streamBuffer ?? 1024),
      heartbeatMs: yield* positiveInt("WO_HEARTBEAT_MS", d.heartbeatMs ?? 15_000),
      maxSubscriptions: yield* positiveInt("WO_MAX_SUBSCRIPTIONS", d.maxSubscriptions ?? 1000),
      maxUriLength: yield* positiveInt("WO_MAX_URI_LENGTH", d.maxUriLength ?? 2048),
      maxSubscriptionBytes: yield* positiveInt("WO_MAX_SUBSCRIPTION_BYTES", d.maxSubscriptionBytes ?? 1024 * 1024),
      maxJsonDepth: yield* positiveInt("WO_MAX_JSON_DEPTH", d.maxJsonDepth ?? 64),
      maxListensPerClient: yield* positiveInt("WO_MAX_LISTENS_PER_CLIENT", d.maxListensPerClient ?? 64),
      maxListenStreams: yield* positiveInt("WO_MAX_LISTEN_STREAMS", d.maxListenStreams ?? 10_000),
      streamMemory: yield* positiveInt("WO_STREAM_MEMORY", d.streamMemory ?? 64 * 1024 * 1024),
      maxEventTailsPerClient: yield* positiveInt("WO_MAX_EVENT_TAILS_PER_CLIENT", d.maxEventTailsPerClient ?? 16),
      maxEventTails: yield* positiveInt("WO_MAX_EVENT_TAILS", d.maxEventTails ?? 128),
      authToken: yield* Config.string("WO_AUTH_TOKEN").pipe(
        Config.option,
        Config.map((o) => Option.getOrElse(Option.filter(o, (t) => t.length > 0), () => d.authToken))
      ),
      accessFile: yield* optionalString("WO_ACCESS_FILE", d.accessFile),
      insecure: yield* Config.boolean("WO_INSECURE").pipe(Config.withDefault(d.insecure ?? false)),
      acceptDataLoss: yield* Config.boolean("WO_ACCEPT_DATA_LOSS").pipe(Config.withDefault(d.acceptDataLoss ?? false)),
      recordFile: yield* Config.string("WO_RECORD").pipe(Config.option, Config.map((o) => Option.getOrElse(o, () => d.recordFile))),
      idempotencyTtlMs: yield* durationMs("WO_IDEMPOTENCY_TTL", d.idempotencyTtlMs ?? 24 * 3_600_000),
      store: yield* optionalString("WO_STORE", d.store),
      metrics: yield* onOff("WO_METRICS", d.metrics ?? true),
      readyMaxLag: yield* positiveInt("WO_READY_MAX_LAG", d.readyMaxLag ?? 1000),
      storeTimeoutMs: yield* durationMs("WO_STORE_TIMEOUT", d.storeTimeoutMs ?? STORE_TIMEOUT_MS),
      viewSnapshotEvery: yield* positiveInt("WO_VIEW_SNAPSHOT_EVERY", d.viewSnapshotEvery ?? VIEW_SNAPSHOT_EVERY),
      refoldThreadFrom: yield* positiveInt("WO_REFOLD_THREAD_FROM", d.refoldThreadFrom ?? REFOLD_THREAD_FROM),
      refoldPriority: yield* Config.literal("idle", "normal")("WO_REFOLD_PRIORITY").pipe(Config.withDefault(d.refoldPriority ?? "idle")),
      idBlock: yield* positiveInt("WO_ID_BLOCK", d.idBlock ?? ID_BLOCK),
      ...(yield* connectionCaps(d)),
      devLoadTimeoutMs: yield* positiveInt("WO_DEV_LOAD_TIMEOUT_MS", d.devLoadTimeoutMs ?? 10_000),
      ...(yield* oauthConfig(d))
    }
    return settings
  })

/** Every key a SettingsInput may have (a Record, so that a new setting cannot be left out). */
const KNOWN_KEYS: ReadonlySet<string> = new Set(Object.keys({
  listen: true, host: true, port: true, dataDir: true, groupCommit: true, ackedRecord: true, maxBatch: true, batchLingerMs: true, rowCache: true,
  bodyLimit: true, defaultPageSize: true, maxPageSize: true, mcpOrigins: true, allowedHosts: true,
  requestTimeoutMs: true, maxSessions: true, sessionIdleMs: true, streamBuffer: true, heartbeatMs: true,
  maxSubscriptions: true, maxUriLength: true, maxSubscriptionBytes: true, maxJsonDepth: true,
  maxListensPerClient: true, maxListenStreams: true, streamMemory: true, maxEventTailsPerClient: true,
  maxEventTails: true, authToken: true, accessFile: true, insecure: true, acceptDataLoss: true, recordFile: true,
  idempotencyTtlMs: true, store: true, metrics: true, readyMaxLag: true, storeTimeoutMs: true, viewSnapshotEvery: true, refoldThreadFrom: true, refoldPriority: true, idBlock: true, catalogReloads: true,
  maxConnectionsPerClient: true, maxConnections: true,
  devLoadTimeoutMs: true, oauthIssuer: true, oauthAudience: true, oauthJwks: true, oauthResource: true
} satisfies Record<keyof SettingsInput, true>))

/** `input` as Settings fields: an unknown key or a malformed `listen` is a ConfigError naming it. */
const checkInput = (input: SettingsInput, what: string): Either.Either<Partial<Settings>, ConfigError.ConfigError> => {
  const unknown = Object.keys(input).filter((k) => !KNOWN_KEYS.has(k))
  if (unknown.length > 0) {
    return Either.left(ConfigError.InvalidData(
      [unknown[0]],
      `loadSettings: unknown ${what} ${unknown.map((k) => `"${k}"`).join(", ")}; the settings are ${[...KNOWN_KEYS].join(", ")}`
    ))
  }
  const { listen, ...rest } = input
  if (listen === undefined) return Either.right(rest)
  const parsed = parseListen(listen)
  return parsed === undefined
    ? Either.left(ConfigError.InvalidData(["listen"], `loadSettings: listen expects HOST:PORT, got "${listen}"`))
    : Either.right({ ...rest, ...parsed })
}

/**
 * Reads the settings from Config (the WO_* environment variables). `defaults` (the program's own settings) apply
 * where the environment sets nothing; `overrides` (command-line flags) win over the environment.
 */
export const loadSettings = (defaults: SettingsInput & { readonly dataDir: string }, overrides: SettingsInput = {}) =>
  Effect.gen(function* () {
    const settings = yield* fromEnvironment(yield* checkInput(defaults, "default"))
    return { ...settings, ...(yield* checkInput(overrides, "override")) }
  })

/** The settings as a layer, for composing the runtime. */
export const settingsLayer = (defaults: SettingsInput & { readonly dataDir: string }, overrides: SettingsInput = {}) =>
  Layer.effect(WoConfig, loadSettings(defaults, overrides))
