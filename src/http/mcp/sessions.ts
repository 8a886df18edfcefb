/**
 * Legacy sessions (L2, L8): minted by initialize with 144 random bits, bounded in number, expired when idle,
 * persisted with their subscriptions. A session has at most one GET stream; a second GET replaces the first.
 * A session's subscriptions are bounded in number and in bytes of URIs, and a subscribe or an unsubscribe costs
 * the same (one map entry, one stored entry) whatever the session already holds.
 *
 * With a shared session store (several nodes on PostgreSQL) the store is the truth and this map a cache: `get`
 * reads the session from the store on every request, so a session made (or subscribed, or ended) on another
 * node is served here as it is now, and an open GET stream here follows its subscriptions.
 */
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { randomBytes } from "node:crypto"
import { WoConfig } from "../../config.ts"
import type { StoreUnavailable } from "../../domain/errors.ts"
import { SessionsFull, Subscribed, SubscriptionBytesFull, SubscriptionsFull, type SubscribeOutcome } from "./session-caps.ts"
import { SubscriptionRegistry } from "../../projections/registry.ts"
import type { NoticeBuffer } from "../notice-buffer.ts"
import { SessionStore, type StoredSession } from "./session-store.ts"
import { uriBytes } from "./uri-limits.ts"

export interface Session {
  readonly id: string
  readonly version: string
  readonly createdAt: number
  /** uri -> log sequence at which the subscription began; only later changes are announced or replayed. */
  readonly subscriptions: Map<string, number>
  lastSeen: number
  stream: NoticeBuffer | undefined
}

export interface SessionsShape {
  /** Mints a session, or refuses when the cap is reached. */
  readonly create: (version: string) => Effect.Effect<Session | SessionsFull, StoreUnavailable>
  /**
   * The live session with that id (touching it), or undefined when unknown, expired or terminated. An Effect
   * because a session may live in a shared store (several nodes) and not be in this process yet.
   */
  readonly get: (id: string) => Effect.Effect<Session | undefined, StoreUnavailable>
  /** SubscriptionsFull: WO_MAX_SUBSCRIPTIONS reached; SubscriptionBytesFull: WO_MAX_SUBSCRIPTION_BYTES would be passed. Nothing is made then. */
  readonly subscribe: (session: Session, uri: string, sinceSeq: number) => Effect.Effect<SubscribeOutcome, StoreUnavailable>
  readonly unsubscribe: (session: Session, uri: string) => Effect.Effect<void, StoreUnavailable>
  /** Makes `buffer` the session's GET stream, closing the one it replaces. */
  readonly attach: (session: Session, buffer: NoticeBuffer) => void
  readonly detach: (session: Session, buffer: NoticeBuffer) => void
  /** Ends the session and frees its stream and subscriptions; false when it did not exist. */
  readonly terminate: (id: string) => Effect.Effect<boolean, StoreUnavailable>
  readonly list: () => ReadonlyArray<Session>
}

export class Sessions extends Context.Tag("writeonce/Sessions")<Sessions, SessionsShape>() {}

const newSessionId = () => randomBytes(18).toString("base64url")

export const SessionsLive = Layer.scoped(
  Sessions,
  Effect.gen(function* () {
    const settings = yield* WoConfig
    const store = yield* SessionStore
    const registry = yield* SubscriptionRegistry
    const sessions = new Map<string, Session>()
    const shared = store.load !== undefined
    /** The UTF-8 bytes of each session's subscribed URIs, against WO_MAX_SUBSCRIPTION_BYTES; gone with the session. */
    const subscriptionBytes = new WeakMap<Session, number>()
    const bytesOf = (s: Session) => subscriptionBytes.get(s) ?? 0
    const fromStore = (id: string, stored: StoredSession): Session => {
      const s: Session = { id, version: stored.version, createdAt: stored.createdAt, subscriptions: new Map(stored.subscriptions), lastSeen: Date.now(), stream: undefined }
      let bytes = 0
      for (const uri of stored.subscriptions.keys()) bytes += uriBytes(uri)
      subscriptionBytes.set(s, bytes)
      return s
    }
    for (const [id, stored] of yield* store.loadAll) sessions.set(id, fromStore(id, stored))

    const forget = (s: Session, uri: string) => {
      if (!s.subscriptions.delete(uri)) return false
      subscriptionBytes.set(s, bytesOf(s) - uriBytes(uri))
      if (s.stream) registry.remove(uri, s.stream)
      return true
    }
    const remember = (s: Session, uri: string, since: number) => {
      s.subscriptions.set(uri, since)
      subscriptionBytes.set(s, bytesOf(s) + uriBytes(uri))
      if (s.stream) registry.add(uri, s.stream)
    }

    /** An ended session keeps nothing: its stream leaves the registry, and a request still holding it finds it empty. */
    const release = (s: Session) => {
      if (s.stream) {
        for (const uri of s.subscriptions.keys()) registry.remove(uri, s.stream)
        s.stream.close("terminated")
        s.stream = undefined
      }
      s.subscriptions.clear()
      subscriptionBytes.delete(s)
    }

    const terminate = (id: string) =>
      Effect.suspend(() => {
        const s = sessions.get(id)
        if (s === undefined) return Effect.succeed(false)
        sessions.delete(id)
        release(s)
        return Effect.as(store.remove(id), true)
      })

    /** Shared store: the session as stored now, cached here; its open stream (if any) follows its subscriptions. */
    const refresh = (id: string) =>
      Effect.map(store.load!(id), (stored) => {
        let s = sessions.get(id)
        if (stored === undefined) {
          // Ended (or expired) on some node.
          if (s !== undefined) {
            sessions.delete(id)
            release(s)
          }
          return undefined
        }
        if (s === undefined) {
          s = fromStore(id, stored)
          sessions.set(id, s)
          return s
        }
        const wanted = stored.subscriptions
        for (const uri of [...s.subscriptions.keys()]) if (!wanted.has(uri)) forget(s, uri)
        for (const [uri, since] of wanted) if (!s.subscriptions.has(uri)) remember(s, uri, since)
        s.lastSeen = Date.now()
        return s
      })

    // Idle expiry: a session with an open stream is in use, whatever its last request.
    const sweep = Effect.suspend(() => {
      const cutoff = Date.now() - settings.sessionIdleMs
      const idle = [...sessions.values()].filter((s) => s.stream === undefined && s.lastSeen < cutoff)
      if (shared) {
        // Another node may be serving an idle session of this cache: forget it here, and let the store end the
        // sessions no node has seen (the ones with a stream open here are marked as seen first).
        for (const s of idle) sessions.delete(s.id)
        const streaming = [...sessions.values()].filter((s) => s.stream !== undefined)
        return Effect.forEach(streaming, (s) => refresh(s.id), { discard: true }).pipe(
          Effect.zipRight(store.expire!(settings.sessionIdleMs)),
          Effect.tap((n) => (n > 0 ? Effect.logDebug(`expired ${n} idle sessions`) : Effect.void))
        )
      }
      return Effect.forEach(idle, (s) => terminate(s.id), { discard: true }).pipe(
        Effect.tap(() => (idle.length ? Effect.logDebug(`expired ${idle.length} idle sessions`) : Effect.void))
      )
    })
    yield* Effect.forkScoped(
      Effect.repeat(Effect.ignoreLogged(sweep), Schedule.spaced(Duration.millis(Math.min(60_000, Math.max(50, settings.sessionIdleMs / 4)))))
    )

    return Sessions.of({
      create: (version) =>
        Effect.suspend((): Effect.Effect<Session | SessionsFull, StoreUnavailable> => {
          if (sessions.size >= settings.maxSessions) return Effect.succeed(new SessionsFull())
          const s: Session = { id: newSessionId(), version, createdAt: Date.now(), subscriptions: new Map(), lastSeen: Date.now(), stream: undefined }
          sessions.set(s.id, s)
          return Effect.as(store.create(s.id, s), s)
        }),
      get: (id) =>
        shared
          ? refresh(id)
          : Effect.sync(() => {
            const s = sessions.get(id)
            if (s !== undefined) s.lastSeen = Date.now()
            return s
          }),
      // Made here first (so concurrent subscribes count it), stored, and taken back if the store refuses.
      subscribe: (s, uri, since) =>
        Effect.suspend((): Effect.Effect<SubscribeOutcome, StoreUnavailable> => {
          if (s.subscriptions.has(uri)) return Effect.succeed(new Subscribed())
          if (s.subscriptions.size >= settings.maxSubscriptions) return Effect.succeed(new SubscriptionsFull())
          if (bytesOf(s) + uriBytes(uri) > settings.maxSubscriptionBytes) return Effect.succeed(new SubscriptionBytesFull())
          remember(s, uri, since)
          return store.subscribe(s.id, uri, since).pipe(
            Effect.tapError(() => Effect.sync(() => forget(s, uri))),
            Effect.as(new Subscribed())
          )
        }),
      unsubscribe: (s, uri) =>
        Effect.suspend(() => {
          const since = s.subscriptions.get(uri)
          if (since === undefined) return Effect.void
          forget(s, uri)
          return store.unsubscribe(s.id, uri).pipe(Effect.tapError(() => Effect.sync(() => remember(s, uri, since))))
        }),
      attach: (s, buffer) => {
        if (s.stream) {
          for (const uri of s.subscriptions.keys()) registry.remove(uri, s.stream)
          s.stream.close("replaced")
        }
        s.stream = buffer
        for (const uri of s.subscriptions.keys()) registry.add(uri, buffer)
      },
      detach: (s, buffer) => {
        if (s.stream !== buffer) return
        for (const uri of s.subscriptions.keys()) registry.remove(uri, buffer)
        s.stream = undefined
        s.lastSeen = Date.now()
      },
      terminate,
      list: () => [...sessions.values()]
    })
  })
)
