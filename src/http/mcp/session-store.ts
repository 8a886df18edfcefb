/**
 * Legacy sessions persisted beside the log (`s!<id>` keys), so that after a restart a client can come back
 * with its session id and Last-Event-ID and receive what it missed. Writes are synced: a session the client
 * was told about survives a crash.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { LevelDb } from "../../log/level-db.ts"
import type { StoreUnavailable } from "../../domain/errors.ts"

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
