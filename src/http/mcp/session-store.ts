/**
 * Legacy sessions persisted beside the log, so that after a restart a client can come back with its session id
 * and Last-Event-ID and receive what it missed. Writes are durable: a session the client was told about survives
 * a crash.
 *
 * A session is stored as a small header and one entry per subscription, so that a subscribe or an unsubscribe
 * writes one entry, whatever the number of subscriptions the session holds (format 1 rewrote the whole list on
 * each; such records are still read, and upgraded when the store opens).
 *
 * Embedded: in the data dir's classic-level store, the header at `s!<id>` and each subscription at
 * `s!<id>!<uri>` (its value the log sequence it began at); all loaded at start. PostgreSQL (`--store`): the
 * `writeonce.sessions` and `writeonce.session_subscriptions` tables shared by every node, read one session at
 * a time (`load`), so that any node behind a plain load balancer serves any session, and a session ended on one
 * node is ended on all.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { type Db, LevelDb } from "../../log/level-db.ts"
import { PgConnection, pgConnectionLayer, type PgConnectionOptions } from "../../log/postgres/connection.ts"
import { SCHEMA } from "../../log/postgres/schema.ts"
import { type StoreUnavailable, DataCorrupt } from "../../domain/errors.ts"

const PREFIX = "s!"
/** Session ids are base64url: `!` and `"` never occur in one, so `s!<id>!` .. `s!<id>"` holds exactly its subscriptions. */
const SEPARATOR = "!"
const headerKey = (id: string) => `${PREFIX}${id}`
const subscriptionKey = (id: string, uri: string) => `${PREFIX}${id}${SEPARATOR}${uri}`
const subscriptionRange = (id: string) => ({ gte: `${PREFIX}${id}${SEPARATOR}`, lt: `${PREFIX}${id}"` })

/** The header as stored: format 1 also held every subscription in it. */
const SessionHeader = Schema.Struct({
  version: Schema.String,
  createdAt: Schema.Number,
  /** Format 1 only: uri -> the log sequence at which the subscription began. */
  subscriptions: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Number }))
})
const decodeHeader = Schema.decodeUnknownEither(Schema.parseJson(SessionHeader))
const encodeHeader = (h: { readonly version: string; readonly createdAt: number }) =>
  JSON.stringify({ version: h.version, createdAt: h.createdAt })

/** The log sequence a subscription began at, as stored; undefined when it is not one. */
const decodeSince = (value: unknown): number | undefined => {
  const n = typeof value === "number" ? value : typeof value === "string" && value !== "" ? Number(value) : NaN
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined
}

export interface StoredSession {
  readonly version: string
  readonly createdAt: number
  /** uri -> the log sequence at which the subscription began. */
  readonly subscriptions: ReadonlyMap<string, number>
}

export interface SessionStoreShape {
  readonly loadAll: Effect.Effect<ReadonlyArray<readonly [string, StoredSession]>, StoreUnavailable>
  /** Stores a new session, without subscriptions. */
  readonly create: (id: string, session: { readonly version: string; readonly createdAt: number }) => Effect.Effect<void, StoreUnavailable>
  /** Adds one subscription (or keeps the one there): writes that entry only. */
  readonly subscribe: (id: string, uri: string, since: number) => Effect.Effect<void, StoreUnavailable>
  /** Removes one subscription: deletes that entry only. */
  readonly unsubscribe: (id: string, uri: string) => Effect.Effect<void, StoreUnavailable>
  /** Removes the session and every subscription it held. */
  readonly remove: (id: string) => Effect.Effect<void, StoreUnavailable>
  /**
   * Present on a store several nodes share: the session as stored now (undefined: unknown or ended), marked as
   * seen. Sessions then live in the store, and a node's memory only caches them.
   */
  readonly load?: (id: string) => Effect.Effect<StoredSession | undefined, StoreUnavailable>
  /** Shared store: ends the sessions no node has seen for `idleMs`. */
  readonly expire?: (idleMs: number) => Effect.Effect<number, StoreUnavailable>
}

export class SessionStore extends Context.Tag("writeonce/SessionStore")<SessionStore, SessionStoreShape>() {}

export const ClassicLevelSessionStore = Layer.effect(
  SessionStore,
  Effect.map(LevelDb, (store) => {
    /**
     * Reads every session. Keys sort a header before its subscriptions. A header we cannot read is dropped with
     * its subscriptions (its client gets 404 and starts a new session); so are subscriptions without a header.
     * Format-1 headers are upgraded in the same pass: their subscriptions moved to entries of their own.
     */
    const load = async (db: Db) => {
      const sessions = new Map<string, { version: string; createdAt: number; subscriptions: Map<string, number> }>()
      const upgrade = db.batch()
      let writes = 0
      for await (const [key, value] of db.iterator({ gte: PREFIX, lt: `${PREFIX}~` })) {
        const rest = key.slice(PREFIX.length)
        const at = rest.indexOf(SEPARATOR)
        if (at === -1) {
          const decoded = decodeHeader(value)
          if (decoded._tag === "Left") continue
          const { version, createdAt, subscriptions: embedded } = decoded.right
          const subscriptions = new Map<string, number>()
          if (embedded !== undefined) {
            for (const [uri, since] of Object.entries(embedded)) {
              subscriptions.set(uri, since)
              upgrade.put(subscriptionKey(rest, uri), String(since))
            }
            upgrade.put(key, encodeHeader({ version, createdAt }))
            writes++
          }
          sessions.set(rest, { version, createdAt, subscriptions })
          continue
        }
        const session = sessions.get(rest.slice(0, at))
        const since = decodeSince(value)
        if (session === undefined || since === undefined) {
          upgrade.del(key)
          writes++
        } else session.subscriptions.set(rest.slice(at + 1), since)
      }
      if (writes > 0) await upgrade.write({ sync: true })
      else await upgrade.close()
      return [...sessions]
    }
    return SessionStore.of({
      loadAll: store.write("cannot read sessions", load),
      create: (id, session) =>
        store.write("cannot save the session", (db) => db.put(headerKey(id), encodeHeader(session), { sync: true })),
      subscribe: (id, uri, since) =>
        store.write("cannot save the subscription", (db) => db.put(subscriptionKey(id, uri), String(since), { sync: true })),
      unsubscribe: (id, uri) =>
        store.write("cannot delete the subscription", (db) => db.del(subscriptionKey(id, uri), { sync: true })),
      remove: (id) =>
        store.write("cannot delete the session", async (db) => {
          const batch = db.batch().del(headerKey(id))
          for await (const key of db.keys(subscriptionRange(id))) batch.del(key)
          await batch.write({ sync: true })
        })
    })
  })
)

/** The sessions of a PostgreSQL store (`--store`), shared by every node (the tables are made by log/postgres/schema.ts). */
export const PostgresSessionStore = Layer.effect(
  SessionStore,
  Effect.map(PgConnection, (conn) =>
    SessionStore.of({
      // Nothing is loaded up front: a node loads a session when one of its requests arrives.
      loadAll: Effect.succeed([]),
      create: (id, session) =>
        Effect.asVoid(conn.query(
          "cannot save the session",
          `insert into ${SCHEMA}.sessions (id, record, last_seen) values ($1, $2, $3)
           on conflict (id) do update set record = excluded.record, last_seen = excluded.last_seen`,
          [id, encodeHeader(session), Date.now()]
        )),
      // Only while the session exists: a session ended on another node keeps no subscription.
      subscribe: (id, uri, since) =>
        Effect.asVoid(conn.query(
          "cannot save the subscription",
          `insert into ${SCHEMA}.session_subscriptions (session_id, uri, since)
           select $1::text, $2::text, $3::bigint where exists (select 1 from ${SCHEMA}.sessions where id = $1::text)
           on conflict (session_id, uri) do nothing`,
          [id, uri, since]
        )),
      unsubscribe: (id, uri) =>
        Effect.asVoid(conn.query(
          "cannot delete the subscription",
          `delete from ${SCHEMA}.session_subscriptions where session_id = $1 and uri = $2`,
          [id, uri]
        )),
      // The subscriptions go with their session (on delete cascade).
      remove: (id) => Effect.asVoid(conn.query("cannot delete the session", `delete from ${SCHEMA}.sessions where id = $1`, [id])),
      load: (id) =>
        Effect.flatMap(
          conn.query<{ record: string; subscriptions: ReadonlyArray<readonly [string, unknown]> }>(
            "cannot read the session",
            `with seen as (update ${SCHEMA}.sessions set last_seen = $2 where id = $1 returning record)
             select seen.record,
                    (select coalesce(json_agg(json_build_array(uri, since)), '[]'::json)
                       from ${SCHEMA}.session_subscriptions where session_id = $1) as subscriptions
               from seen`,
            [id, Date.now()]
          ),
          (r) => {
            if (r.rows.length === 0) return Effect.succeed(undefined)
            const decoded = decodeHeader(r.rows[0].record)
            if (decoded._tag === "Left") {
              return Effect.fail(new DataCorrupt({ reason: `corrupt record: the stored session ${id} does not decode` }))
            }
            const subscriptions = new Map<string, number>()
            for (const [uri, value] of r.rows[0].subscriptions) {
              const since = decodeSince(value)
              if (since !== undefined) subscriptions.set(uri, since)
            }
            return Effect.succeed<StoredSession>({ version: decoded.right.version, createdAt: decoded.right.createdAt, subscriptions })
          }
        ),
      expire: (idleMs) =>
        Effect.map(
          conn.query("cannot expire sessions", `delete from ${SCHEMA}.sessions where last_seen < $1`, [Date.now() - idleMs]),
          (r) => r.rowCount ?? 0
        )
    }))
)

/**
 * The shared session store of the PostgreSQL store at `url`, over the runtime's one connection to it (the log's:
 * `pgConnectionLayer` gives the same layer for the same URL), so session reads follow a failover with the log.
 */
export const postgresSessionStoreLayer = (url: string, options: PgConnectionOptions = {}) =>
  PostgresSessionStore.pipe(Layer.provide(pgConnectionLayer(url, options)))
