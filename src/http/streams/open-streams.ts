/**
 * The SSE streams that are open right now, of every kind: legacy sessions' GET streams, modern listen streams
 * and `/api/_events` tails. The one record of them: shutdown closes them all (listen streams then send their
 * graceful result, tails say why they ended), the console lists them as the connected agents, metrics count
 * them, and the caps on listen streams and tails are counted here, per client address and in all (429 or an
 * error past either).
 */
import { Context, Effect, Layer, type Scope } from "effect"
import { type Settings, WoConfig } from "../../support/config.ts"
import { scopedSync } from "../../support/scoped-sync.ts"
import { makeClientSlots, type ClientSlots } from "./client-slots.ts"
import type { EndReason } from "./notice-buffer.ts"
import type { Principal } from "../../access/principal.ts"
import { Revocation } from "../../access/revocation.ts"

export type StreamKind = "session" | "listen" | "events"

export interface StreamInfo {
  readonly kind: StreamKind
  /** The client's source address. */
  readonly client: string
  /** The legacy session id, the listen request's id, or the first sequence a tail asked for. */
  readonly owner: string
  readonly since: number
  readonly subscriptions: () => ReadonlyArray<string>
  readonly listChanges: boolean
  /** Who opened it (absent where no credential is required): its stream ends when the principal is revoked. */
  readonly principal?: Principal
}

/** What shutdown and wo dev do to an open stream. */
export interface OpenStream {
  readonly close: (reason: EndReason) => void
  /** wo dev swapped the catalog: tell the client its lists changed, as far as it asked (legacy: always). */
  readonly catalogChanged?: () => void
}

/** A capped stream's place, counted from the request on (see `reserve`). */
export interface Reservation {
  readonly kind: StreamKind
  readonly client: string
}

export interface OpenStreamsShape {
  /** True when `client` may open no more stream of `kind`: its cap per client or in all is reached. */
  readonly full: (kind: StreamKind, client: string) => boolean
  /**
   * Counts a stream of `kind` against its caps from now, before its response starts, so that concurrent
   * requests cannot all pass `full` first; the stream's `track` takes the place over and frees it.
   */
  readonly reserve: (kind: StreamKind, client: string) => Reservation
  /**
   * Tracks the stream for the current scope, counted against its caps (in the place reserved for it, if any: a
   * place reserved for the same kind and client as `info`'s).
   */
  readonly track: (info: StreamInfo, stream: OpenStream, reserved?: Reservation) => Effect.Effect<void, never, Scope.Scope>
  readonly closeAll: (reason: EndReason) => void
  /** Closes every stream whose info matches (the access file revoked its principal); how many it closed. */
  readonly closeWhere: (matches: (info: StreamInfo) => boolean, reason: EndReason) => number
  /** wo dev: every open stream tells its client that the catalog changed (tools and resource lists). */
  readonly announceCatalogChange: () => void
  readonly list: () => ReadonlyArray<StreamInfo>
  /** How many streams `principal` has open now (its `streams` limit: rate-limits.ts). */
  readonly streamsOf: (principal: Principal) => number
}

export class OpenStreams extends Context.Tag("writeonce/OpenStreams")<OpenStreams, OpenStreamsShape>() {}

type Caps = Pick<Settings, "maxListensPerClient" | "maxListenStreams" | "maxEventTailsPerClient" | "maxEventTails">

export const makeOpenStreams = (settings: Caps): OpenStreamsShape => {
  const open = new Map<OpenStream, StreamInfo>()
  // Counted as they are tracked, so that a principal's limit costs a lookup, not a pass over every stream.
  const byPrincipal = new Map<Principal, number>()
  const count = (principal: Principal | undefined, by: 1 | -1) => {
    if (principal === undefined) return
    const n = (byPrincipal.get(principal) ?? 0) + by
    if (n === 0) byPrincipal.delete(principal)
    else byPrincipal.set(principal, n)
  }
  // The caps, made here only: a legacy session has one stream at most, so its kind has none of its own.
  const caps: Partial<Record<StreamKind, ClientSlots>> = {
    listen: makeClientSlots(settings.maxListensPerClient, settings.maxListenStreams),
    events: makeClientSlots(settings.maxEventTailsPerClient, settings.maxEventTails)
  }
  const reserve = (kind: StreamKind, client: string): Reservation => {
    caps[kind]?.take(client)
    return { kind, client }
  }
  // One release for every stream, keyed by the stream: what an open stream keeps here is its entry alone.
  const untrack = (stream: OpenStream) => {
    const info = open.get(stream)
    if (info === undefined) return
    open.delete(stream)
    caps[info.kind]?.release(info.client)
    count(info.principal, -1)
  }
  return {
    full: (kind, client) => caps[kind]?.full(client) ?? false,
    reserve,
    track: (info, stream, reserved) =>
      Effect.asVoid(scopedSync(() => {
        if (reserved === undefined) caps[info.kind]?.take(info.client)
        open.set(stream, info)
        count(info.principal, 1)
        return stream
      }, untrack)),
    closeAll: (reason) => {
      for (const stream of open.keys()) stream.close(reason)
    },
    closeWhere: (matches, reason) => {
      let closed = 0
      for (const [stream, info] of [...open]) {
        if (!matches(info)) continue
        stream.close(reason)
        closed++
      }
      return closed
    },
    announceCatalogChange: () => {
      for (const stream of open.keys()) stream.catalogChanged?.()
    },
    list: () => [...open.values()],
    streamsOf: (principal) => byPrincipal.get(principal) ?? 0
  }
}

export const OpenStreamsLive = Layer.effect(OpenStreams, Effect.map(WoConfig, makeOpenStreams))

/** Revocation over these streams: a revoked principal's streams end, saying why. */
export const StreamRevocationLive = Layer.effect(
  Revocation,
  Effect.map(OpenStreams, (streams) => ({
    endStreamsOf: (gone: (principal: Principal) => boolean) =>
      streams.closeWhere((info) => info.principal !== undefined && gone(info.principal), "revoked")
  }))
)
