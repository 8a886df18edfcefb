/**
 * The connection to the PostgreSQL store: the writable primary among the listed hosts, and a small pool to it
 * that closes with the scope. Every failure is a StoreUnavailable naming what failed.
 *
 * Each pooled connection runs with `synchronous_commit=on` whatever the server's or role's default, so a commit
 * returns only once it is durable as the server's `synchronous_standby_names` requires (the cluster script asks
 * for the primary and at least one standby).
 */
import { Context, Effect, Exit, Layer, type Scope } from "effect"
import pg from "pg"
import { StoreUnavailable } from "../../domain/errors.ts"
import { describeHost, parseStoreUrl, redactStoreUrl, type StoreHost, type StoreTarget } from "./store-url.ts"

const describe = (e: unknown) => (e instanceof Error ? e.message : String(e))

/** Connections: one for the writer, the rest for reads (recovery, the tailer, resumption, the log audit). */
const POOL_SIZE = 4

export interface PgConnectionShape {
  /** The primary the pool connects to now (it changes after a failover). */
  readonly primary: () => StoreHost
  /** How many times the primary changed since this connection was made. */
  readonly generation: () => number
  readonly database: string
  /** Runs one statement on any pooled connection. */
  readonly query: <R extends pg.QueryResultRow = pg.QueryResultRow>(
    what: string,
    text: string,
    values?: ReadonlyArray<unknown>
  ) => Effect.Effect<pg.QueryResult<R>, StoreUnavailable>
  /** A connection of the pool for the scope; discarded (not reused) if the scope fails. */
  readonly client: Effect.Effect<pg.PoolClient, StoreUnavailable, Scope.Scope>
  /** A connection of its own to the primary (for LISTEN), closed with the scope. */
  readonly dedicated: Effect.Effect<pg.Client, StoreUnavailable, Scope.Scope>
  /**
   * The error of a failed statement, as a StoreUnavailable. A lost connection or a server that no longer takes
   * writes (the primary died or was demoted) also starts looking for the writable primary among the hosts again.
   */
  readonly failed: (what: string, e: unknown) => StoreUnavailable
}

export class PgConnection extends Context.Tag("writeonce/PgConnection")<PgConnection, PgConnectionShape>() {}

const clientConfig = (target: StoreTarget, host: StoreHost): pg.ClientConfig => ({
  host: host.host,
  port: host.port,
  ...(target.user !== undefined ? { user: target.user } : {}),
  ...(target.password !== undefined ? { password: target.password } : {}),
  ...(target.database !== undefined ? { database: target.database } : {}),
  ...(target.ssl ? { ssl: true } : {}),
  application_name: target.applicationName,
  connectionTimeoutMillis: target.connectTimeout * 1000,
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

/** Whether the host is a writable primary (not in recovery, not read-only); a string says why it cannot be used. */
const probe = (target: StoreTarget, host: StoreHost) =>
  Effect.promise(async (): Promise<true | string> => {
    const client = new pg.Client(clientConfig(target, host))
    client.on("error", () => undefined)
    try {
      await client.connect()
      const { rows } = await client.query<{ standby: boolean; read_only: string }>(
        "select pg_is_in_recovery() as standby, current_setting('default_transaction_read_only') as read_only"
      )
      if (rows[0].standby) return "a standby"
      if (rows[0].read_only === "on") return "read-only"
      return true
    } catch (e) {
      return describe(e)
    } finally {
      await client.end().catch(() => undefined)
    }
  })

/** The first writable host of the list, as libpq's `target_session_attrs=read-write` picks it. */
export const findPrimary = (target: StoreTarget) =>
  Effect.gen(function* () {
    const refused: Array<string> = []
    for (const host of target.hosts) {
      const answer = yield* probe(target, host)
      if (answer === true) return host
      refused.push(`${describeHost(host)}: ${answer}`)
    }
    return yield* new StoreUnavailable({ reason: `no writable PostgreSQL primary among the store's hosts (${refused.join("; ")})` })
  })

/**
 * The connection for a `--store` URL: its primary found, a pool opened, closed when the scope closes. When the
 * primary is lost, the hosts are probed again (at most once at a time) and a new pool opened to the writable one:
 * a node carries on after a standby is promoted.
 */
export const makePgConnection = (url: string) =>
  Effect.gen(function* () {
    const target = yield* Effect.mapError(parseStoreUrl(url), (reason) => new StoreUnavailable({ reason }))
    const openPool = (host: StoreHost) => {
      const p = new pg.Pool({ ...clientConfig(target, host), max: POOL_SIZE, idleTimeoutMillis: 60_000 })
      // An idle connection that dies (the server restarted) must not crash the process: the pool drops it.
      p.on("error", () => undefined)
      return p
    }
    let current = { primary: yield* findPrimary(target), pool: undefined as unknown as pg.Pool }
    current.pool = openPool(current.primary)
    let closed = false
    let generation = 0
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => {
        closed = true
        return current.pool.end().catch(() => undefined)
      }))
    yield* Effect.logInfo(`store: PostgreSQL primary ${describeHost(current.primary)} (${redactStoreUrl(url)})`)

    // Re-finding the primary: one search at a time; failures while one runs just wait for its outcome.
    let searching: Promise<void> | undefined
    const search = (lost: pg.Pool) => {
      if (searching !== undefined || closed || lost !== current.pool) return
      searching = (async () => {
        for (let attempt = 0; !closed && lost === current.pool; attempt++) {
          const found = await Effect.runPromise(Effect.either(findPrimary(target)))
          if (found._tag === "Right") {
            const old = current.pool
            current = { primary: found.right, pool: openPool(found.right) }
            generation++
            old.end().catch(() => undefined)
            await Effect.runPromise(Effect.logWarning(`store: the primary changed; now ${describeHost(found.right)}`))
            return
          }
          // Nothing writable yet (a promotion is under way): look again shortly.
          await new Promise((r) => setTimeout(r, Math.min(1000, 100 * (attempt + 1))))
        }
      })().finally(() => {
        searching = undefined
      })
    }
    const failedOn = (pool: pg.Pool) => (what: string, e: unknown) => {
      if (lostPrimary(e)) search(pool)
      return new StoreUnavailable({ reason: `${what}: ${describe(e)}` })
    }
    const query: PgConnectionShape["query"] = (what, text, values) =>
      Effect.suspend(() => {
        const pool = current.pool
        return Effect.tryPromise({ try: () => pool.query(text, values as Array<unknown> | undefined), catch: (e) => failedOn(pool)(what, e) })
      })
    const client = Effect.acquireRelease(
      Effect.suspend(() => {
        const pool = current.pool
        return Effect.tryPromise({
          try: () => pool.connect(),
          catch: (e) => failedOn(pool)("cannot connect to the store", e)
        }).pipe(Effect.tap((c) => Effect.sync(() => c.on("error", ignore))))
      }),
      (c, exit) =>
        Effect.sync(() => {
          c.removeListener("error", ignore)
          // After a failure the connection's state is unknown (a transaction may be open): never reuse it.
          c.release(Exit.isFailure(exit) ? new Error("discarded after a failure") : undefined)
        })
    )
    const dedicated = Effect.acquireRelease(
      Effect.suspend(() => {
        const pool = current.pool
        const c = new pg.Client(clientConfig(target, current.primary))
        c.on("error", ignore)
        return Effect.as(Effect.tryPromise({ try: () => c.connect(), catch: (e) => failedOn(pool)("cannot connect to the store", e) }), c)
      }),
      (c) => Effect.promise(() => c.end().catch(() => undefined))
    )
    return PgConnection.of({
      primary: () => current.primary,
      generation: () => generation,
      database: target.database ?? target.user ?? "postgres",
      query,
      client,
      dedicated,
      failed: (what, e) => failedOn(current.pool)(what, e)
    })
  })

/** A checked-out connection that loses its server reports it through its next query; the event itself is ignored. */
const ignore = () => undefined

export const pgConnectionLayer = (url: string) => Layer.scoped(PgConnection, makePgConnection(url))
