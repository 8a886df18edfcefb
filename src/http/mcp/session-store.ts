/**
 * Legacy sessions persisted beside the log, so that after a restart a client can come back with its session id
 * and Last-Event-ID and receive what it missed. Writes are durable: a session the client was told about survives
 * a crash.
 *
 * Embedded: `s!<id>` keys in the data dir's classic-level store, all loaded at start. PostgreSQL (`--store`): the
 * `writeonce.sessions` table shared by every node, read one session at a time (`load`), so that any node behind a
 * plain load balancer serves any session, and a session ended on one node is ended on all.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { LevelDb } from "../../log/level-db.ts"
import { PgConnection, pgConnectionLayer } from "../../log/postgres/connection.ts"
import { SCHEMA } from "../../log/postgres/schema.ts"
import { StoreUnavailable } from "../../domain/errors.ts"

const PREFIX = "s!"

export const StoredSession = Schema.Struct({
  version: Schema.String,
  createdAt: Schema.Number,
  /** uri -> the log sequence at which the subscription began. */
  subscriptions: Schema.Record({ key: Schema.String, value: Schema.Number })
})
export type StoredSession = typeof StoredSession.Type

const decodeStored = Schema.decodeUnknownEither(Schema.parseJson(StoredSession))

export interface SessionStoreShape {
  readonly loadAll: Effect.Effect<ReadonlyArray<readonly [string, StoredSession]>, StoreUnavailable>
  readonly save: (id: string, session: StoredSession) => Effect.Effect<void, StoreUnavailable>
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
  Effect.map(LevelDb, (store) => ({
    loadAll: store.read("cannot read sessions", async (db) => {
        const out: Array<readonly [string, StoredSession]> = []
        for await (const [key, value] of db.iterator({ gte: PREFIX, lt: `${PREFIX}~` })) {
          const decoded = decodeStored(value)
          // A record we cannot read is dropped: its client gets 404 and starts a new session.
          if (decoded._tag === "Right") out.push([key.slice(PREFIX.length), decoded.right])
        }
        return out
      }),
    save: (id, session) =>
      store.write("cannot save the session", (db) => db.put(`${PREFIX}${id}`, JSON.stringify(session), { sync: true })),
    remove: (id) => store.write("cannot delete the session", (db) => db.del(`${PREFIX}${id}`, { sync: true }))
  }))
)

/** The sessions of a PostgreSQL store (`--store`), shared by every node (the table is made by log/postgres/schema.ts). */
export const PostgresSessionStore = Layer.effect(
  SessionStore,
  Effect.map(PgConnection, (conn) =>
    SessionStore.of({
      // Nothing is loaded up front: a node loads a session when one of its requests arrives.
      loadAll: Effect.succeed([]),
      save: (id, session) =>
        Effect.asVoid(conn.query(
          "cannot save the session",
          `insert into ${SCHEMA}.sessions (id, record, last_seen) values ($1, $2, $3)
           on conflict (id) do update set record = excluded.record, last_seen = excluded.last_seen`,
          [id, JSON.stringify(session), Date.now()]
        )),
      remove: (id) => Effect.asVoid(conn.query("cannot delete the session", `delete from ${SCHEMA}.sessions where id = $1`, [id])),
      load: (id) =>
        Effect.flatMap(
          conn.query<{ record: string }>(
            "cannot read the session",
            `update ${SCHEMA}.sessions set last_seen = $2 where id = $1 returning record`,
            [id, Date.now()]
          ),
          (r) => {
            if (r.rows.length === 0) return Effect.succeed(undefined)
            const decoded = decodeStored(r.rows[0].record)
            return decoded._tag === "Right"
              ? Effect.succeed(decoded.right)
              : Effect.fail(new StoreUnavailable({ reason: `corrupt record: the stored session ${id} does not decode` }))
          }
        ),
      expire: (idleMs) =>
        Effect.map(
          conn.query("cannot expire sessions", `delete from ${SCHEMA}.sessions where last_seen < $1`, [Date.now() - idleMs]),
          (r) => r.rowCount ?? 0
        )
    }))
)

/** The shared session store of the PostgreSQL store at `url`, over a small pool of its own. */
export const postgresSessionStoreLayer = (url: string) => PostgresSessionStore.pipe(Layer.provide(pgConnectionLayer(url)))
