/**
 * The connected agents: legacy sessions (with or without their GET stream) and modern listen streams. The
 * console reads them through the two small shapes below, which the HTTP layer's Sessions and OpenStreams
 * satisfy, so the console never imports HTTP internals.
 */
import type { AgentsView } from "./wire.ts"

/** What the console reads of a legacy session. */
export interface SessionSummary {
  readonly id: string
  readonly version: string
  readonly createdAt: number
  readonly lastSeen: number
  /** True while the session's GET stream is open. */
  readonly streaming: boolean
  readonly subscriptions: ReadonlyMap<string, number>
}

/** What the console reads of an open stream. */
export interface StreamSummary {
  readonly kind: string
  readonly owner: string
  readonly since: number
  readonly subscriptions: () => ReadonlyArray<string>
  readonly listChanges: boolean
}

/** A legacy session id authorises requests on that session, so the console never shows it whole. */
const SHOWN_ID_CHARS = 8

export const agentsView = (
  sessions: { readonly list: () => ReadonlyArray<SessionSummary> },
  streams: { readonly list: () => ReadonlyArray<StreamSummary> }
): AgentsView => ({
  sessions: sessions.list().map((s) => ({
    id: `${s.id.slice(0, SHOWN_ID_CHARS)}…`,
    version: s.version,
    createdAt: s.createdAt,
    lastSeen: s.lastSeen,
    streaming: s.streaming,
    subscriptions: [...s.subscriptions.keys()]
  })),
  listens: streams.list()
    .filter((s) => s.kind === "listen")
    .map((s) => ({ id: s.owner, since: s.since, subscriptions: s.subscriptions(), listChanges: s.listChanges }))
})
