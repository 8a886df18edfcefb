/**
 * The SSE streams that are open right now: shutdown closes them all (listen streams then send their graceful
 * result), and the console lists them as the connected agents.
 */
import { Context, Effect, Layer, type Scope } from "effect"
import type { EndReason, NoticeBuffer } from "./notice-buffer.ts"

export interface StreamInfo {
  readonly kind: "session" | "listen"
  /** The legacy session id, or the listen request's id. */
  readonly owner: string
  readonly since: number
  readonly subscriptions: () => ReadonlyArray<string>
  readonly listChanges: boolean
}

export interface OpenStreamsShape {
  /** Tracks the stream for the current scope. */
  readonly track: (info: StreamInfo, buffer: NoticeBuffer) => Effect.Effect<void, never, Scope.Scope>
  readonly closeAll: (reason: EndReason) => void
  /** wo dev: every open stream tells its client that the catalog changed (tools and resource lists). */
  readonly announceCatalogChange: () => void
  readonly list: () => ReadonlyArray<StreamInfo>
}

export class OpenStreams extends Context.Tag("writeonce/OpenStreams")<OpenStreams, OpenStreamsShape>() {}

export const OpenStreamsLive = Layer.sync(OpenStreams, () => {
  const open = new Map<NoticeBuffer, StreamInfo>()
  return {
    track: (info, buffer) =>
      Effect.acquireRelease(Effect.sync(() => open.set(buffer, info)), () => Effect.sync(() => open.delete(buffer))).pipe(Effect.asVoid),
    closeAll: (reason) => {
      for (const buffer of open.keys()) buffer.close(reason)
    },
    announceCatalogChange: () => {
      for (const buffer of open.keys()) buffer.catalogChanged?.()
    },
    list: () => [...open.values()]
  }
})
