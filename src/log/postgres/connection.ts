/**
 * The connection to the PostgreSQL store: the writable primary among the listed hosts, and a small pool to it
 * that closes with the scope. Every failure is a StoreError naming what failed. One per runtime: the log,
 * its tailer and the legacy session store share it (`pgConnectionLayer` is memoised by URL), so they all follow
 * a failover at once.
 *
 * Fencing: of the writable hosts, the one on the highest timeline wins, then the one furthest in its WAL (see
 * `choosePrimary`); a host behind what this node has seen (a lower timeline, or the same one at an earlier WAL
 * position), or of another cluster, is never taken. A serving node keeps what it has seen in its data dir
 * (fence-memory.ts), so this holds after a restart too; a node with no memory yet does not choose while a listed
 * host it cannot compare is unreachable (see `findPrimary`).
 *
 * Bounded stalls: every statement, and every append as a whole, fails after `timeoutMs` (WO_STORE_TIMEOUT) when
 * the primary does not answer (stopped, partitioned); the failure starts a search for the primary, which finds
 * the same one again once it answers.
 *
 * Each pooled connection runs with `synchronous_commit=on` whatever the server's or role's default, so a commit
 * returns only once it is durable as the server's `synchronous_standby_names` requires (the cluster script asks
 * for the primary and at least one standby).
 */
import { Context, Duration, Effect, Exit, Layer, Schedule, type Scope } from "effect"
import * as path from "node:path"
import pg from "pg"
import { STORE_TIMEOUT_MS } from "../../support/config.ts"
import { type StoreError, StoreFailed } from "../../domain/errors.ts"
import { describeHost, parseStoreUrl, redactStoreUrl, type StoreHost, type StoreTarget } from "./store-url.ts"
import { FENCE_MEMORY_FILE, furthest, isBehind, readFenceMemory, sameSeen, writeFenceMemory, type StoreSeen } from "./fence-memory.ts"

const describe = (e: unknown) => (e instanceof Error ? e.message : String(e))

/** Connections: one for the writer, the rest for reads (recovery, the tailer, resumption, the log audit). */
const POOL_SIZE = 4

export interface PgConnectionShape {
  /** The primary the pool connects to now (it changes after a failover). */
  readonly primary: () => StoreHost
  /** How many times the primary changed since this connection was made. */
  readonly generation: () => number
  /** How long a statement, or an append as a whole, may wait for the primary (WO_STORE_TIMEOUT). */
  readonly timeoutMs: number
  /** A bound of `timeoutMs` from now, for the promises of one piece of work (an append's statements). */
  readonly deadline: () => Deadline
  readonly database: string
  /** Runs one statement on any pooled connection. */
  readonly query: <R extends pg.QueryResultRow = pg.QueryResultRow>(
    what: string,
    text: string,
    values?: ReadonlyArray<unknown>
  ) => Effect.Effect<pg.QueryResult<R>, StoreError>
  /** A connection of the pool for the scope; discarded (not reused) if the scope fails. */
  readonly client: Effect.Effect<pg.PoolClient, StoreError, Scope.Scope>
  /** A connection of its own to the primary (for LISTEN), closed with the scope. */
  readonly dedicated: Effect.Effect<pg.Client, StoreError, Scope.Scope>
  /** How to connect to the primary now: for a client that lives off this pool (the synchronous row reads: row-reads.ts). */
  readonly clientConfig: () => pg.ClientConfig
  /**
   * The error of a failed statement, as a StoreError. A lost connection or a server that no longer takes
   * writes (the primary died or was demoted) also starts looking for the writable primary among the hosts again.
   */
  readonly failed: (what: string, e: unknown) => StoreError
}

/**
 * A wait for the primary bounded by one timer: `within` rejects once the deadline passes (an error without SQLSTATE:
 * `failed` takes it for the primary's loss, and a search starts), whatever the promise does; `clear` ends the timer.
 * Raced at the promise level because Effect's timeout forks two fibers per call (per batch and per read: measured).
 */
export interface Deadline {
  readonly within: <A>(p: Promise<A>) => Promise<A>
  readonly clear: () => void
}

const makeDeadline = (timeoutMs: number): Deadline => {
  let expire!: (e: Error) => void
  const expired = new Promise<never>((_, reject) => {
    expire = reject
  })
  expired.catch(ignore)
  const timer = setTimeout(() => expire(new Error(`the primary did not answer within ${timeoutMs} ms (WO_STORE_TIMEOUT)`)), timeoutMs)
  return { within: (p) => Promise.race([p, expired]), clear: () => clearTimeout(timer) }
}

export class PgConnection extends Context.Tag("writeonce/PgConnection")<PgConnection, PgConnectionShape>() {}

export interface PgConnectionOptions {
  /** WO_STORE_TIMEOUT: how long a statement or an append may wait for the primary. */
  readonly timeoutMs?: number
  /**
   * The serving node's data dir, where it keeps what it has seen of the store across restarts (fence-memory.ts).
   * Tools that only check the store leave it out: they neither read nor write that memory.
   */
  readonly memoryDir?: string
}

/** How often a serving node records the primary's WAL position in its memory (one small query, one small file). */
const RECORD_EVERY = Duration.seconds(1)
/** Between two looks for a primary while a start waits for one it can take. */
const LOOK_AGAIN = Duration.millis(500)

const clientConfig = (target: StoreTarget, host: StoreHost, timeoutMs: number): pg.ClientConfig => ({
  host: host.host,
  port: host.port,
  ...(target.user !== undefined ? { user: target.user } : {}),
  ...(target.password !== undefined ? { password: target.password } : {}),
  ...(target.database !== undefined ? { database: target.database } : {}),
  ...(target.ssl ? { ssl: true } : {}),
  application_name: target.applicationName,
  connectionTimeoutMillis: target.connectTimeout * 1000,
  // Client-side: a stopped server enforces no statement_timeout. The connection is then discarded.
  query_timeout: timeoutMs,
  keepAlive: true,
  options: "-c synchronous_commit=on"
})

/**
 * Whether the error says the server is gone or cannot take writes: no SQLSTATE (a socket error), class 08
 * (connection), 57P (shutdown, crash), 25006 (read-only transaction: a standby or a fenced primary).
 */
const lostPrimary = (e: unknown) => {
  const code = (e as { code?: unknown } | null)?.code
  return typeof code !== "string" || /^(08|57P|53|58)/.test(code) || code === "25006" || !/^[0-9A-Z]{5}$/.test(code)
}

/**
 * A writable host as probed: its timeline, its WAL position (bytes since 0/0) and how far of it is flushed, and
 * its cluster's system identifier (undefined if the role may not read it).
 */
export interface Writable {
  readonly host: StoreHost
  readonly timeline: number
  readonly lsn: bigint
  readonly flushed?: bigint
  readonly systemIdentifier?: string
}

/** A host that is not a writable primary: a standby, read-only, or unreachable (`reachable` false), and why. */
export interface NotWritable {
  readonly host: StoreHost
  readonly why: string
  readonly reachable: boolean
}

const isWritable = (p: Writable | NotWritable): p is Writable => "timeline" in p

/** Bytes since 0/0 of an `(lsn - '0/0')::text` (a numeric, which may print a fraction). */
const bytes = (numeric: string) => BigInt(numeric.replace(/\..*$/, ""))

/** The timeline the server writes on and its WAL positions (written and flushed): one statement on a primary. */
const POSITION = `select substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) as timeline,
  (pg_current_wal_lsn() - '0/0'::pg_lsn)::text as lsn, (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::text as flushed`
type PositionRow = { timeline: string; lsn: string; flushed: string }

/** Whether the host is a writable primary (not in recovery, not read-only), with its timeline; else why not. */
const probe = (target: StoreTarget, host: StoreHost, timeoutMs: number) =>
  Effect.promise(async (): Promise<Writable | NotWritable> => {
    const client = new pg.Client(clientConfig(target, host, timeoutMs))
    client.on("error", () => undefined)
    try {
      try {
        await client.connect()
      } catch (e) {
        return { host, why: describe(e), reachable: false }
      }
      const { rows } = await client.query<{ standby: boolean; read_only: string }>(
        "select pg_is_in_recovery() as standby, current_setting('default_transaction_read_only') as read_only"
      )
      if (rows[0].standby) return { host, why: "a standby", reachable: true }
      if (rows[0].read_only === "on") return { host, why: "read-only", reachable: true }
      // The timeline this server writes on now: the first 8 hex digits of its current WAL file's name
      // (pg_control_checkpoint() only shows the new timeline after the checkpoint that follows a promotion).
      const at = (await client.query<PositionRow>(POSITION)).rows[0]
      // The cluster's identity, which its standbys share; a role that may not read it leaves the check out.
      const id = await client.query<{ id: string }>("select system_identifier::text as id from pg_control_system()").then((r) => r.rows[0]?.id, () => undefined)
      return {
        host,
        timeline: parseInt(at.timeline, 16),
        lsn: bytes(at.lsn),
        flushed: bytes(at.flushed),
        ...(id !== undefined ? { systemIdentifier: id } : {})
      }
    } catch (e) {
      return { host, why: describe(e), reachable: false }
    } finally {
      client.end().catch(() => undefined)
    }
  })

const describeWritable = (w: Writable) => `${describeHost(w.host)} (timeline ${w.timeline}, WAL at ${w.lsn})`

/** What a node has seen of the store when it chooses, and whether its data dir keeps it (for messages). */
export interface Fence {
  readonly seen?: StoreSeen
  readonly kept?: boolean
}

/** Whether the host belongs to another cluster than the one seen (both identities known and different). */
const isForeign = (w: Writable, seen: StoreSeen | undefined) =>
  seen?.systemIdentifier !== undefined && w.systemIdentifier !== undefined && w.systemIdentifier !== seen.systemIdentifier

/** Why a writable host is refused against what was seen, or undefined if it may be taken. */
const refusal = (w: Writable, fence: Fence): string | undefined => {
  const seen = fence.seen
  if (seen === undefined) return undefined
  if (isForeign(w, seen)) {
    return `another PostgreSQL cluster (system identifier ${w.systemIdentifier}; ${fence.kept === true ? "this node's data dir remembers" : "this node saw"} ${seen.systemIdentifier})`
  }
  if (w.timeline < seen.timeline) return `behind what this node has seen (timeline ${w.timeline} < ${seen.timeline})`
  if (isBehind(w, seen)) return `behind what this node has seen (timeline ${w.timeline} at WAL ${w.lsn} < ${seen.lsn})`
  return undefined
}

/**
 * Fencing: which writable host is the primary. Every promotion starts a new timeline, so an old primary that
 * came back writable (or a standby promoted by mistake from an older state) is on a lower timeline than the one
 * promoted after it, whatever its WAL position: it is behind, or has diverged. So the highest timeline wins, and
 * between two on one timeline (two standbys of one primary both promoted), the one furthest in its WAL. A host
 * behind what this node has seen (`fence`: a lower timeline, or the same one at an earlier WAL position) is refused
 * even when it is the only one writable: the newer primary is down or paused, and the old one would serve a past
 * that was overwritten. A host of another cluster (another system identifier) is never ranked. No table or extra
 * step at promotion is needed: PostgreSQL records the timeline itself.
 */
export const choosePrimary = (writable: ReadonlyArray<Writable>, fence: Fence = {}): { readonly chosen?: Writable; readonly refused: ReadonlyArray<Writable> } => {
  const foreign = (w: Writable) => isForeign(w, fence.seen)
  const ranked = writable.filter((w) => !foreign(w)).sort((a, b) => b.timeline - a.timeline || (b.lsn > a.lsn ? 1 : b.lsn < a.lsn ? -1 : 0))
  const chosen = ranked[0] !== undefined && refusal(ranked[0], fence) === undefined ? ranked[0] : undefined
  const refused = [...(chosen === undefined ? ranked : ranked.slice(1)), ...writable.filter(foreign)]
  return { ...(chosen !== undefined ? { chosen } : {}), refused }
}

export interface FindOptions {
  readonly timeoutMs?: number
  readonly fence?: Fence
  /**
   * The node keeps a memory of the store but has none yet (a fresh data dir): it takes no primary while a listed
   * host is unreachable, since that host may be a newer primary (paused, partitioned) and the writable one an old
   * primary back from the dead. Nothing it has seen tells them apart.
   */
  readonly fresh?: boolean
}

/**
 * The primary among the store's hosts (all probed at once), chosen by `choosePrimary`. Several writable hosts
 * are logged as an error: all but the chosen one must be fenced by the operator.
 */
export const findPrimary = (target: StoreTarget, options: FindOptions = {}) =>
  Effect.gen(function* () {
    const timeoutMs = options.timeoutMs ?? STORE_TIMEOUT_MS
    const fence = options.fence ?? {}
    const answers = yield* Effect.all(target.hosts.map((host) => probe(target, host, timeoutMs)), { concurrency: "unbounded" })
    const writable = answers.filter(isWritable)
    const { chosen, refused } = choosePrimary(writable, fence)
    const whyRefused = (w: Writable) => refusal(w, fence) ?? "behind or diverged"
    if (writable.length > 1 || (chosen === undefined && writable.length > 0)) {
      yield* Effect.logError(
        `store: ${writable.length} writable PostgreSQL servers: ${writable.map(describeWritable).join(", ")}. ` +
          (chosen !== undefined ? `Using ${describeHost(chosen.host)}; ` : "") +
          `refusing ${refused.map((w) => `${describeHost(w.host)} (${whyRefused(w)})`).join(", ")}: stop it, or rejoin it as a standby with pg_rewind`
      )
    }
    const unreachable = answers.filter((a): a is NotWritable => !isWritable(a) && !a.reachable)
    if (chosen !== undefined && options.fresh === true && unreachable.length > 0) {
      return yield* new StoreFailed({
        reason: `this node has no memory of this store yet (a fresh data dir), and cannot compare the writable server ${describeWritable(chosen)} ` +
          `with ${unreachable.map((u) => `${describeHost(u.host)} (${u.why})`).join(", ")}, which may be a newer primary: start the node again once every listed host ` +
          `answers, or list only the store's own hosts`
      })
    }
    if (chosen !== undefined) return chosen
    const why = answers.map((a) => `${describeHost(a.host)}: ${isWritable(a) ? whyRefused(a) : a.why}`)
    return yield* new StoreFailed({ reason: `no writable PostgreSQL primary among the store's hosts (${why.join("; ")})` })
  })

/** Where a writable host stands, as the memory keeps it: the flushed position (a crash of the server keeps it). */
const seenAt = (w: Writable): StoreSeen => ({
  timeline: w.timeline,
  lsn: w.flushed ?? w.lsn,
  ...(w.systemIdentifier !== undefined ? { systemIdentifier: w.systemIdentifier } : {})
})

/**
 * The connection for a `--store` URL: its primary found, a pool opened, closed when the scope closes. When the
 * primary is lost (or stops answering), the hosts are probed again (at most once at a time) and a new pool opened
 * to the primary then: a node carries on after a standby is promoted, and on the same pool when the primary
 * merely paused.
 */
export const makePgConnection = (url: string, options: PgConnectionOptions = {}) =>
  Effect.gen(function* () {
    const target = yield* Effect.mapError(parseStoreUrl(url), (reason) => new StoreFailed({ reason }))
    const timeoutMs = options.timeoutMs ?? STORE_TIMEOUT_MS
    const openPool = (host: StoreHost) => {
      // Waiting for a pooled connection is bounded too (all of them may be stuck on a paused primary).
      const p = new pg.Pool({ ...clientConfig(target, host, timeoutMs), connectionTimeoutMillis: Math.min(timeoutMs, target.connectTimeout * 1000), max: POOL_SIZE, idleTimeoutMillis: 60_000 })
      // An idle connection that dies (the server restarted) must not crash the process: the pool drops it.
      p.on("error", () => undefined)
      return p
    }
    // What this node has seen of the store: read from its data dir (a serving node), else since this start.
    const memoryDir = options.memoryDir
    const remembered = memoryDir === undefined ? undefined : readFenceMemory(memoryDir)
    if (remembered !== undefined && "unreadable" in remembered) return yield* new StoreFailed({ reason: remembered.unreadable })
    let seen: StoreSeen | undefined = remembered
    const fence = (): Fence => ({ ...(seen !== undefined ? { seen } : {}), kept: memoryDir !== undefined })
    /**
     * Adds what was just seen to the memory; written to the data dir when it moved (a serving node only), off the
     * event loop, one write at a time (they share a temporary file). Resolves once this position is durable.
     */
    let writes: Promise<void> = Promise.resolve()
    const record = (now: StoreSeen): Promise<void> => {
      const next = furthest(seen, now)
      if (sameSeen(seen, next)) return writes
      seen = next
      if (memoryDir === undefined) return writes
      // What is written is the furthest seen by then: this position, or one past it.
      const write = writes.then(() => writeFenceMemory(memoryDir, seen ?? next))
      // A failed write is its caller's to report; the next write starts anyway.
      writes = write.catch(() => undefined)
      return write
    }

    /** A store moved to another cluster on purpose (a restore, pg_upgrade) gets a new identity: the way out. */
    const movedHint = (reason: string) =>
      memoryDir !== undefined && reason.includes("another PostgreSQL cluster")
        ? `. If the store moved to that cluster on purpose, delete ${path.join(memoryDir, FENCE_MEMORY_FILE)}`
        : ""

    // At start, wait (up to WO_STORE_TIMEOUT) for a primary this node may take: one may be paused, or promoting.
    const started = Date.now()
    let told = ""
    const first = yield* findPrimary(target, { timeoutMs, fence: fence(), fresh: memoryDir !== undefined && seen === undefined }).pipe(
      Effect.tapError((e) =>
        e.reason === told ? Effect.void : Effect.logWarning(`store: waiting for a PostgreSQL primary this node may take: ${(told = e.reason)}`)),
      Effect.retry({ schedule: Schedule.spaced(LOOK_AGAIN), while: () => Date.now() - started < timeoutMs }),
      Effect.mapError((e) => new StoreFailed({ reason: `refusing to start after waiting ${timeoutMs} ms (WO_STORE_TIMEOUT): ${e.reason}${movedHint(e.reason)}` }))
    )
    yield* Effect.tryPromise({
      try: () => record(seenAt(first)),
      catch: (e) => new StoreFailed({ reason: `cannot keep what this node saw of the store in ${memoryDir}: ${describe(e)}` })
    })
    let current = { primary: first.host, timeline: first.timeline, pool: openPool(first.host) }
    let closed = false
    let generation = 0
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => {
        closed = true
        return current.pool.end().catch(() => undefined)
      }))
    yield* Effect.logInfo(`store: PostgreSQL primary ${describeWritable(first)} (${redactStoreUrl(url)})`)

    // Re-finding the primary: one search at a time; failures while one runs just wait for its outcome.
    let searching: Promise<void> | undefined
    const search = (lost: pg.Pool) => {
      if (searching !== undefined || closed || lost !== current.pool) return
      searching = (async () => {
        for (let attempt = 0; !closed && lost === current.pool; attempt++) {
          // Never back to a primary behind what this node has seen (fencing).
          const found = await Effect.runPromise(Effect.either(findPrimary(target, { timeoutMs, fence: fence() })))
          if (found._tag === "Right") {
            const now = found.right
            if (now.host === current.primary && now.timeline === current.timeline) return // it only paused, or restarted
            // Remembered before it is used: a node killed right after the switch refuses the old primary when it starts again.
            try {
              await record(seenAt(now))
            } catch (e) {
              await Effect.runPromise(Effect.logError(`store: cannot keep what this node saw of the store in ${memoryDir}: ${describe(e)}`))
            }
            const old = current.pool
            current = { primary: now.host, timeline: now.timeline, pool: openPool(now.host) }
            generation++
            old.end().catch(() => undefined)
            await Effect.runPromise(Effect.logWarning(`store: the primary changed; now ${describeWritable(now)}`))
            return
          }
          // Nothing writable yet (a promotion is under way, or the primary is paused): look again shortly.
          await new Promise((r) => setTimeout(r, Math.min(1000, 100 * (attempt + 1))))
        }
      })().finally(() => {
        searching = undefined
      })
    }
    const failedOn = (pool: pg.Pool) => (what: string, e: unknown) => {
      if (lostPrimary(e)) search(pool)
      return new StoreFailed({ reason: `${what}: ${describe(e)}` })
    }
    const deadline = () => makeDeadline(timeoutMs)

    // A serving node records how far the primary's WAL has been flushed, so that after a restart it also refuses
    // a primary of the same timeline that is behind. Failures are left to the node's own statements to notice.
    if (memoryDir !== undefined) {
      const recordPosition = Effect.promise(async () => {
        const pool = current.pool
        const bound = makeDeadline(timeoutMs)
        try {
          const at = (await bound.within(pool.query<PositionRow>(POSITION))).rows[0]
          if (pool !== current.pool || closed) return
          await record({ timeline: parseInt(at.timeline, 16), lsn: bytes(at.flushed), ...(seen?.systemIdentifier !== undefined ? { systemIdentifier: seen.systemIdentifier } : {}) })
        } catch {
          // the primary is gone or paused, or the data dir failed: the next round tries again
        } finally {
          bound.clear()
        }
      })
      yield* Effect.forkScoped(Effect.repeat(recordPosition, Schedule.spaced(RECORD_EVERY)))
    }
    const query: PgConnectionShape["query"] = (what, text, values) =>
      Effect.suspend(() => {
        const pool = current.pool
        return Effect.tryPromise({
          try: () => {
            const bound = makeDeadline(timeoutMs)
            return bound.within(pool.query(text, values as Array<unknown> | undefined)).finally(bound.clear)
          },
          catch: (e) => failedOn(pool)(what, e)
        })
      })
    const client = Effect.acquireRelease(
      Effect.suspend(() => {
        const pool = current.pool
        return Effect.tryPromise({
          try: () => pool.connect(),
          catch: (e) => failedOn(pool)("cannot connect to the store", e)
        }).pipe(Effect.tap((c) => Effect.sync(() => watchErrors(c))))
      }),
      (c, exit) =>
        Effect.sync(() => {
          // After a failure the connection's state is unknown (a transaction may be open): never reuse it.
          c.release(Exit.isFailure(exit) ? new Error("discarded after a failure") : undefined)
        })
    )
    const dedicated = Effect.acquireRelease(
      Effect.suspend(() => {
        const pool = current.pool
        const c = new pg.Client(clientConfig(target, current.primary, timeoutMs))
        c.on("error", ignore)
        return Effect.as(Effect.tryPromise({ try: () => c.connect(), catch: (e) => failedOn(pool)("cannot connect to the store", e) }), c)
      }),
      (c) => Effect.promise(() => c.end().catch(() => undefined))
    )
    return PgConnection.of({
      primary: () => current.primary,
      generation: () => generation,
      timeoutMs,
      deadline,
      database: target.database ?? target.user ?? "postgres",
      query,
      client,
      dedicated,
      clientConfig: () => clientConfig(target, current.primary, timeoutMs),
      failed: (what, e) => failedOn(current.pool)(what, e)
    })
  })

/** A checked-out connection that loses its server reports it through its next query; the event itself is ignored. */
const ignore = () => undefined
/** Pooled connections already ignoring their `error` events: the listener is added once per connection, not per checkout. */
const watched = new WeakSet<pg.PoolClient>()
const watchErrors = (c: pg.PoolClient) => {
  if (watched.has(c)) return
  watched.add(c)
  c.on("error", ignore)
}

// One layer value per URL and bound: Effect builds a layer value once per runtime, so the log, its tailer and the
// session store of one runtime share one connection (and one failover), while two runtimes get one each.
const layers = new Map<string, Layer.Layer<PgConnection, StoreError>>()

/** The connection layer for `url`: the same value for the same URL and options, so one runtime builds it once. */
export const pgConnectionLayer = (url: string, options: PgConnectionOptions = {}) => {
  const key = `${options.timeoutMs ?? STORE_TIMEOUT_MS} ${options.memoryDir ?? ""} ${url}`
  let layer = layers.get(key)
  if (layer === undefined) {
    layer = Layer.scoped(PgConnection, makePgConnection(url, options))
    layers.set(key, layer)
  }
  return layer
}
