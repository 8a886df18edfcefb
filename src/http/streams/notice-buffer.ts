/**
 * What a live stream is to the registry, the sessions and shutdown: a sink that never blocks the publisher,
 * and can be closed with a reason. Its bound lives in the push sink behind it (push-sink.ts): on overflow the
 * stream closes instead of growing, so a legacy client resumes with Last-Event-ID and a listener re-listens.
 */
import type { Sink } from "../../subscriptions/registry.ts"

/** "revoked": its principal was removed from the access file, or its token or grants changed. */
export type EndReason = "overflow" | "shutdown" | "replaced" | "terminated" | "revoked"

export interface NoticeBuffer extends Sink {
  readonly close: (reason: EndReason) => void
  readonly isClosed: () => boolean
  /** wo dev swapped the catalog: tell the client its lists changed, as far as it asked (legacy: always). */
  readonly catalogChanged?: () => void
}
