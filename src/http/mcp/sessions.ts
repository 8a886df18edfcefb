/**
 * Legacy sessions: minted by initialize with 144 random bits, bounded in number, expired when idle,
 * persisted with their subscriptions. A session has at most one GET stream; a second GET replaces the first.
 * A session's subscriptions are bounded in number and in bytes of URIs, and a subscribe or an unsubscribe costs
 * the same (one map entry, one stored entry) whatever the session already holds.
 *
 * With a shared session store (several nodes on PostgreSQL) the store is the truth and this map a cache: `get`
 * reads the session from the store on every request, so a session made (or subscribed, or ended) on another
 * node is served here as it is now, and an open GET stream here follows its subscriptions.
 *
 * Sessions own each session's record (its subscriptions as persisted: uri -> the sequence each began at, its
 * last request, its one GET stream) and are its only writer: callers hold a `Session` (who it is) and read
 * the rest as a snapshot. Who is routed which notice is the registry's (registry.ts): an open GET stream holds
 * one registry subscription, which this module changes as the session subscribes and unsubscribes.
 */
import { Context, Duration, Effect, Layer, Schedule, type Scope } from "effect"
import { ownedSessionId } from "../../access/session-owner.ts"
import { randomBytes } from "node:crypto"
import { WoConfig } from "../../support/config.ts"
import { Catalog } from "../../domain/app-catalog.ts"
import type { StoreError } from "../../domain/errors.ts"
import { SessionsFull, Subscribed, type SubscribeOutcome } from "./session-caps.ts"
import { SessionStore, type SessionClient, type StoredSession } from "../../log/session-store.ts"
import { storedTopic, type HeldTopic, type Topic } from "../../subscriptions/live-queries.ts"
import { SubscriptionRegistry, type Subscription } from "../../subscriptions/registry.ts"
import type { NoticeBuffer } from "../streams/notice-buffer.ts"
import { overSubscriptionCaps, uriBytes } from "./uri-limits.ts"
import { scopedSync } from "../../support/scoped-sync.ts"

/** A legacy session as a request holds it: who it is. What it holds is read through a snapshot. */
export interface Session {
  readonly id: string
  readonly version: string
  readonly createdAt: number
  /** The client as its initialize named it (`clientInfo`): the events of its calls record it. */
  readonly client?: SessionClient
}

/** A session's state at one moment, a copy: changing it changes nothing. */
export interface SessionSnapshot extends Session {
  readonly lastSeen: number
  /** True while the session's GET stream is open. */
  readonly streaming: boolean
  /** uri -> log sequence at which the subscription began; only later changes are announced or replayed. */
  readonly subscriptions: ReadonlyMap<string, number>
  /** The same subscriptions with their topics as read once when they came in (resumption replays with them). */
  readonly topics: ReadonlyMap<string, HeldTopic>
}

export interface SessionsShape {
  /**
   * Mints a session, or refuses when the cap is reached. `owner`: the scope of the principal opening it, which its id names (access/session-owner.ts); `client`: the
   * clientInfo it initialized with, which its writes record.
   */
  readonly create: (version: string, owner?: string, client?: SessionClient) => Effect.Effect<Session | SessionsFull, StoreError>
  /**
   * The live session with that id (touching it), or undefined when unknown, expired or terminated. An Effect
   * because a session may live in a shared store (several nodes) and not be in this process yet.
   */
  readonly get: (id: string) => Effect.Effect<Session | undefined, StoreError>
  /**
   * `get` without an Effect, present when every session lives in this process (no shared store): the legacy
   * era then admits a request as the modern one does, without running an Effect (bench: MCP get, legacy).
   */
  readonly getHere?: (id: string) => Session | undefined
  /** SubscriptionsFull: WO_MAX_SUBSCRIPTIONS reached; SubscriptionBytesFull: WO_MAX_SUBSCRIPTION_BYTES would be passed. Nothing is made then. */
  readonly subscribe: (session: Session, topic: Topic, sinceSeq: number) => Effect.Effect<SubscribeOutcome, StoreError>
  readonly unsubscribe: (session: Session, uri: string) => Effect.Effect<void, StoreError>
  /**
   * Makes `buffer` the session's GET stream for the current scope, closing the one it replaces: from now on it
   * receives the notices of the session's subscriptions, whatever the session subscribes to meanwhile.
   */
  readonly stream: (session: Session, buffer: NoticeBuffer) => Effect.Effect<void, never, Scope.Scope>
  /** Ends the session and frees its stream and subscriptions; false when it did not exist. */
  readonly terminate: (id: string) => Effect.Effect<boolean, StoreError>
  readonly snapshot: (session: Session) => SessionSnapshot
  readonly list: () => ReadonlyArray<SessionSnapshot>
  /** How many sessions are live here (metrics: no copies made). */
  readonly count: () => number
}

export class Sessions extends Context.Tag("writeonce/Sessions")<Sessions, SessionsShape>() {}

const newSessionId = (owner: string | undefined) => ownedSessionId(randomBytes(18).toString("base64url"), owner)

/** What this module keeps of a session; never handed out. */
interface Entry {
  readonly session: Session
  /** uri -> the sequence it began at, and the URI as read once (for the registry). */
  readonly subscriptions: Map<string, HeldTopic>
  /** The UTF-8 bytes of the subscribed URIs, against WO_MAX_SUBSCRIPTION_BYTES. */
  bytes: number
  lastSeen: number
  stream: { readonly buffer: NoticeBuffer; readonly subscription: Subscription } | undefined
}

const snapshotOf = (e: Entry): SessionSnapshot => ({
  ...e.session,
  lastSeen: e.lastSeen,
  streaming: e.stream !== undefined,
  subscriptions: new Map([...e.subscriptions].map(([uri, { since }]) => [uri, since])),
  topics: new Map(e.subscriptions)
})

export const SessionsLive = Layer.scoped(
  Sessions,
  Effect.gen(function* () {
    const settings = yield* WoConfig
    const catalog = yield* Catalog
    const store = yield* SessionStore
    const registry = yield* SubscriptionRegistry
    const entries = new Map<string, Entry>()
    /** A session handed out -> its entry (also after it ended: a request still holding it finds it empty). */
    const byHandle = new WeakMap<Session, Entry>()
    const shared = store.load !== undefined

    const newEntry = (session: Session): Entry => {
      const e: Entry = { session: Object.freeze(session), subscriptions: new Map(), bytes: 0, lastSeen: Date.now(), stream: undefined }
      byHandle.set(e.session, e)
      return e
    }
    const entryOf = (session: Session) => byHandle.get(session)!

    const forget = (e: Entry, uri: string) => {
      if (!e.subscriptions.delete(uri)) return false
      e.bytes -= uriBytes(uri)
      e.stream?.subscription.remove(uri)
      return true
    }
    const remember = (e: Entry, topic: Topic, since: number) => {
      e.subscriptions.set(topic.uri, { since, topic })
      e.bytes += uriBytes(topic.uri)
      e.stream?.subscription.add(topic)
    }
    const fromStore = (id: string, stored: StoredSession): Entry => {
      const e = newEntry({ id, version: stored.version, createdAt: stored.createdAt, client: stored.client })
      for (const [uri, since] of stored.subscriptions) remember(e, storedTopic(catalog, uri), since)
      return e
    }
    for (const [id, stored] of yield* store.loadAll) entries.set(id, fromStore(id, stored))

    /** The session's stream leaves the registry and is closed. */
    const closeStream = (e: Entry, reason: "replaced" | "terminated") => {
      if (e.stream === undefined) return
      e.stream.subscription.end()
      e.stream.buffer.close(reason)
      e.stream = undefined
    }
    /** An ended session keeps nothing: its stream leaves the registry, and a request still holding it finds it empty. */
    const release = (e: Entry) => {
      closeStream(e, "terminated")
      e.subscriptions.clear()
      e.bytes = 0
    }

    const terminate = (id: string) =>
      Effect.suspend(() => {
        const e = entries.get(id)
        if (e === undefined) return Effect.succeed(false)
        entries.delete(id)
        release(e)
        return Effect.as(store.remove(id), true)
      })

    /** Shared store: the session as stored now, cached here; its open stream (if any) follows its subscriptions. */
    const refresh = (id: string) =>
      Effect.map(store.load!(id), (stored) => {
        let e = entries.get(id)
        if (stored === undefined) {
          // Ended (or expired) on some node.
          if (e !== undefined) {
            entries.delete(id)
            release(e)
          }
          return undefined
        }
        if (e === undefined) {
          e = fromStore(id, stored)
          entries.set(id, e)
          return e.session
        }
        const wanted = stored.subscriptions
        for (const uri of [...e.subscriptions.keys()]) if (!wanted.has(uri)) forget(e, uri)
        for (const [uri, since] of wanted) if (!e.subscriptions.has(uri)) remember(e, storedTopic(catalog, uri), since)
        e.lastSeen = Date.now()
        return e.session
      })

    // Idle expiry: a session with an open stream is in use, whatever its last request.
    const sweep = Effect.suspend(() => {
      const cutoff = Date.now() - settings.sessionIdleMs
      const idle = [...entries.values()].filter((e) => e.stream === undefined && e.lastSeen < cutoff)
      if (shared) {
        // Another node may be serving an idle session of this cache: forget it here, and let the store end the
        // sessions no node has seen (the ones with a stream open here are marked as seen first).
        for (const e of idle) entries.delete(e.session.id)
        const streaming = [...entries.values()].filter((e) => e.stream !== undefined)
        return Effect.forEach(streaming, (e) => refresh(e.session.id), { discard: true }).pipe(
          Effect.zipRight(store.expire!(settings.sessionIdleMs)),
          Effect.tap((n) => (n > 0 ? Effect.logDebug(`expired ${n} idle sessions`) : Effect.void))
        )
      }
      return Effect.forEach(idle, (e) => terminate(e.session.id), { discard: true }).pipe(
        Effect.tap(() => (idle.length ? Effect.logDebug(`expired ${idle.length} idle sessions`) : Effect.void))
      )
    })
    yield* Effect.forkScoped(
      Effect.repeat(Effect.ignoreLogged(sweep), Schedule.spaced(Duration.millis(Math.min(60_000, Math.max(50, settings.sessionIdleMs / 4)))))
    )

    const getHere = (id: string): Session | undefined => {
      const e = entries.get(id)
      if (e === undefined) return undefined
      e.lastSeen = Date.now()
      return e.session
    }

    return Sessions.of({
      create: (version, owner, client) =>
        Effect.suspend((): Effect.Effect<Session | SessionsFull, StoreError> => {
          if (entries.size >= settings.maxSessions) return Effect.succeed(new SessionsFull())
          const e = newEntry({ id: newSessionId(owner), version, createdAt: Date.now(), client })
          entries.set(e.session.id, e)
          return Effect.as(store.create(e.session.id, e.session), e.session)
        }),
      get: (id) => (shared ? refresh(id) : Effect.sync(() => getHere(id))),
      ...(shared ? {} : { getHere }),
      // Made here first (so concurrent subscribes count it), stored, and taken back if the store refuses.
      subscribe: (session, topic, since) =>
        Effect.suspend((): Effect.Effect<SubscribeOutcome, StoreError> => {
          const e = entryOf(session)
          if (e.subscriptions.has(topic.uri)) return Effect.succeed(new Subscribed())
          const over = overSubscriptionCaps(e.subscriptions.size + 1, e.bytes + uriBytes(topic.uri), settings)
          if (over !== undefined) return Effect.succeed(over)
          remember(e, topic, since)
          return store.subscribe(session.id, topic.uri, since).pipe(
            Effect.tapError(() => Effect.sync(() => forget(e, topic.uri))),
            Effect.as(new Subscribed())
          )
        }),
      unsubscribe: (session, uri) =>
        Effect.suspend(() => {
          const e = entryOf(session)
          const held = e.subscriptions.get(uri)
          if (held === undefined) return Effect.void
          forget(e, uri)
          return store.unsubscribe(session.id, uri).pipe(Effect.tapError(() => Effect.sync(() => remember(e, held.topic, held.since))))
        }),
      stream: (session, buffer) =>
        Effect.gen(function* () {
          const e = entryOf(session)
          closeStream(e, "replaced")
          const subscription = yield* registry.subscribe(buffer, [...e.subscriptions.values()].map((s) => s.topic))
          e.stream = { buffer, subscription }
          // A plain finalizer: Effect.addFinalizer's would hold the fiber's FiberRefs while the stream is open.
          yield* scopedSync(() => undefined, () => {
            if (e.stream?.buffer !== buffer) return
            e.stream = undefined
            e.lastSeen = Date.now()
          })
        }),
      terminate,
      snapshot: (session) => snapshotOf(entryOf(session)),
      list: () => [...entries.values()].map(snapshotOf),
      count: () => entries.size
    })
  })
)
