/**
 * The sessions of the embedded store: in the data dir's classic-level store, the header at `s!<id>` and each
 * subscription at `s!<id>!<uri>` (its value the log sequence it began at); all loaded at start.
 */
import { Effect, Layer } from "effect"
import { type Db, LevelDb } from "./level-db.ts"
import { decodeHeader, decodeSince, encodeHeader, SessionStore, type SessionClient } from "../session-store.ts"

const PREFIX = "s!"
/** Session ids are base64url: `!` and `"` never occur in one, so `s!<id>!` .. `s!<id>"` holds exactly its subscriptions. */
const SEPARATOR = "!"
const headerKey = (id: string) => `${PREFIX}${id}`
const subscriptionKey = (id: string, uri: string) => `${PREFIX}${id}${SEPARATOR}${uri}`
const subscriptionRange = (id: string) => ({ gte: `${PREFIX}${id}${SEPARATOR}`, lt: `${PREFIX}${id}"` })

export const ClassicLevelSessionStore = Layer.effect(
  SessionStore,
  Effect.map(LevelDb, (store) => {
    /**
     * Reads every session. Keys sort a header before its subscriptions. A header we cannot read is dropped with
     * its subscriptions (its client gets 404 and starts a new session); so are subscriptions without a header.
     * Format-1 headers are upgraded in the same pass: their subscriptions move to entries of their own.
     */
    const load = async (db: Db) => {
      const sessions = new Map<string, { version: string; createdAt: number; client?: SessionClient; subscriptions: Map<string, number> }>()
      const upgrade = db.batch()
      let writes = 0
      for await (const [key, value] of db.iterator({ gte: PREFIX, lt: `${PREFIX}~` })) {
        const rest = key.slice(PREFIX.length)
        const at = rest.indexOf(SEPARATOR)
        if (at === -1) {
          const decoded = decodeHeader(value)
          if (decoded._tag === "Left") continue
          const { version, createdAt, client, subscriptions: embedded } = decoded.right
          const subscriptions = new Map<string, number>()
          if (embedded !== undefined) {
            for (const [uri, since] of Object.entries(embedded)) {
              subscriptions.set(uri, since)
              upgrade.put(subscriptionKey(rest, uri), String(since))
            }
            upgrade.put(key, encodeHeader({ version, createdAt, client }))
            writes++
          }
          sessions.set(rest, { version, createdAt, client, subscriptions })
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
