/**
 * Legacy MCP sessions persisted beside the log, so that after a restart a client can come back with its session
 * id and Last-Event-ID and receive what it missed. Writes are durable: a session the client was told about
 * survives a crash. This is the seam: the MCP layer (src/http/mcp/sessions.ts) sees only this interface; the
 * engines implement it beside their logs.
 *
 * A session is stored as a small header and one entry per subscription, so that a subscribe or an unsubscribe
 * writes one entry, whatever the number of subscriptions the session holds (format 1 rewrote the whole list on
 * each; such records are still read, and upgraded when the store opens).
 *
 *  - Embedded (classic-level-session-store.ts): in the data dir's store, loaded whole at start.
 *  - PostgreSQL (postgres/session-store.ts, `--store`): tables shared by every node, read one session at a time
 *    (`load`), so that any node behind a plain load balancer serves any session, and a session ended on one
 *    node is ended on all.
 */
import { Context, type Effect, Schema } from "effect"
import type { StoreError } from "../domain/errors.ts"

/** The header as stored: format 1 also held every subscription in it. */
const SessionHeader = Schema.Struct({
  version: Schema.String,
  createdAt: Schema.Number,
  /** The client as initialize named it (`clientInfo`), recorded on the events its calls make; absent before. */
  client: Schema.optional(Schema.Struct({ name: Schema.String, version: Schema.optional(Schema.String) })),
  /** Format 1 only: uri -> the log sequence at which the subscription began. */
  subscriptions: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Number }))
})
export const decodeHeader = Schema.decodeUnknownEither(Schema.parseJson(SessionHeader))
/** The MCP client a legacy session was opened by, as its initialize named it. */
export interface SessionClient {
  readonly name: string
  readonly version?: string
}
export const encodeHeader = (h: { readonly version: string; readonly createdAt: number; readonly client?: SessionClient }) =>
  JSON.stringify(h.client === undefined ? { version: h.version, createdAt: h.createdAt } : { version: h.version, createdAt: h.createdAt, client: h.client })

/** The log sequence a subscription began at, as stored; undefined when it is not one. */
export const decodeSince = (value: unknown): number | undefined => {
  const n = typeof value === "number" ? value : typeof value === "string" && value !== "" ? Number(value) : NaN
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined
}

export interface StoredSession {
  readonly version: string
  readonly createdAt: number
  readonly client?: SessionClient
  /** uri -> the log sequence at which the subscription began. */
  readonly subscriptions: ReadonlyMap<string, number>
}

export interface SessionStoreShape {
  readonly loadAll: Effect.Effect<ReadonlyArray<readonly [string, StoredSession]>, StoreError>
  /** Stores a new session, without subscriptions. */
  readonly create: (id: string, session: { readonly version: string; readonly createdAt: number; readonly client?: SessionClient }) => Effect.Effect<void, StoreError>
  /** Adds one subscription (or keeps the one there): writes that entry only. */
  readonly subscribe: (id: string, uri: string, since: number) => Effect.Effect<void, StoreError>
  /** Removes one subscription: deletes that entry only. */
  readonly unsubscribe: (id: string, uri: string) => Effect.Effect<void, StoreError>
  /** Removes the session and every subscription it held. */
  readonly remove: (id: string) => Effect.Effect<void, StoreError>
  /**
   * Present on a store several nodes share: the session as stored now (undefined: unknown or ended), marked as
   * seen. Sessions then live in the store, and a node's memory only caches them.
   */
  readonly load?: (id: string) => Effect.Effect<StoredSession | undefined, StoreError>
  /** Shared store: ends the sessions no node has seen for `idleMs`. */
  readonly expire?: (idleMs: number) => Effect.Effect<number, StoreError>
}

export class SessionStore extends Context.Tag("writeonce/SessionStore")<SessionStore, SessionStoreShape>() {}

