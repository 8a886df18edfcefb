import { Effect, Layer } from "effect"
import { type StoreError, DataCorrupt } from "../../domain/errors.ts"
import { decodeHeader, decodeSince, encodeHeader, SessionStore, type StoredSession } from "../session-store.ts"
import { PgConnection, pgConnectionLayer, type PgConnectionOptions } from "./connection.ts"
import { SCHEMA } from "./schema.ts"

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
            const { version, createdAt, client } = decoded.right
            return Effect.succeed<StoredSession>({ version, createdAt, client, subscriptions })
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
