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

/** Connections: one for the writer, the rest for reads (recovery, resumption, the log audit). */
const POOL_SIZE = 4

export interface PgConnectionShape {
  /** The primary the pool connects to. */
  readonly primary: StoreHost
  readonly database: string
  readonly pool: pg.Pool
  /** Runs one statement on any pooled connection. */
  readonly query: <R extends pg.QueryResultRow = pg.QueryResultRow>(
    what: string,
    text: string,
    values?: ReadonlyArray<unknown>
  ) => Effect.Effect<pg.QueryResult<R>, StoreUnavailable>
  /** A connection of the pool for the scope; discarded (not reused) if the scope fails. */
  readonly client: Effect.Effect<pg.PoolClient, StoreUnavailable, Scope.Scope>
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

/** The connection for a `--store` URL: its primary found, a pool opened, closed when the scope closes. */
export const makePgConnection = (url: string) =>
  Effect.gen(function* () {
    const target = yield* Effect.mapError(parseStoreUrl(url), (reason) => new StoreUnavailable({ reason }))
    const primary = yield* findPrimary(target)
    const pool = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const p = new pg.Pool({ ...clientConfig(target, primary), max: POOL_SIZE, idleTimeoutMillis: 60_000 })
        // An idle connection that dies (the server restarted) must not crash the process: the pool drops it.
        p.on("error", () => undefined)
        return p
      }),
      (p) => Effect.promise(() => p.end().catch(() => undefined))
    )
    yield* Effect.logInfo(`store: PostgreSQL primary ${describeHost(primary)} (${redactStoreUrl(url)})`)
    const query: PgConnectionShape["query"] = (what, text, values) =>
      Effect.tryPromise({
        try: () => pool.query(text, values as Array<unknown> | undefined),
        catch: (e) => new StoreUnavailable({ reason: `${what}: ${describe(e)}` })
      })
    const client = Effect.acquireRelease(
      Effect.tryPromise({
        try: () => pool.connect(),
        catch: (e) => new StoreUnavailable({ reason: `cannot connect to the store: ${describe(e)}` })
      }).pipe(Effect.tap((c) => Effect.sync(() => c.on("error", ignore)))),
      (c, exit) =>
        Effect.sync(() => {
          c.removeListener("error", ignore)
          // After a failure the connection's state is unknown (a transaction may be open): never reuse it.
          c.release(Exit.isFailure(exit) ? new Error("discarded after a failure") : undefined)
        })
    )
    return PgConnection.of({ primary, database: target.database ?? target.user ?? "postgres", pool, query, client })
  })

/** A checked-out connection that loses its server reports it through its next query; the event itself is ignored. */
const ignore = () => undefined

export const pgConnectionLayer = (url: string) => Layer.scoped(PgConnection, makePgConnection(url))
