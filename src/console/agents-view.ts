/** The connected agents: legacy sessions (with or without their GET stream) and modern listen streams. */
import type { OpenStreamsShape } from "../http/open-streams.ts"
import type { SessionsShape } from "../http/mcp/sessions.ts"
import type { AgentsView } from "./wire.ts"

/** A legacy session id authorises requests on that session, so the console never shows it whole. */
const SHOWN_ID_CHARS = 8

export const agentsView = (sessions: SessionsShape, streams: OpenStreamsShape): AgentsView => ({
  sessions: sessions.list().map((s) => ({
    id: `${s.id.slice(0, SHOWN_ID_CHARS)}…`,
    version: s.version,
    createdAt: s.createdAt,
    lastSeen: s.lastSeen,
    streaming: s.stream !== undefined,
    subscriptions: [...s.subscriptions.keys()]
  })),
  listens: streams.list()
    .filter((s) => s.kind === "listen")
    .map((s) => ({ id: s.owner, since: s.since, subscriptions: s.subscriptions(), listChanges: s.listChanges }))
})
