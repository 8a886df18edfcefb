/**
 * A legacy session's GET stream: replay from the durable log after Last-Event-ID, then live; bounded;
 * one per session (a second GET replaces the first). Live notices go straight to the push sink as the frame
 * every session shares (notice-frames.ts); the replay is read from the log in batches, one socket write each.
 */
import { Chunk, Effect, Stream } from "effect"
import type { Settings } from "../../support/config.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import { parseUri, viewUri } from "../../domain/uri.ts"
import type { KeyedViewsShape } from "../../projections/views/keyed-views.ts"
import type { EventLogShape } from "../../log/event-log.ts"
import type { Notice } from "../../subscriptions/registry.ts"
import { parsePosition, positionId, resumeNotices } from "../../subscriptions/resumption.ts"
import type { RowsShape } from "../../projections/rows/rows.ts"
import type { ViewsShape } from "../../projections/views/views.ts"
import type { EdgeResponse } from "../edge/edge-types.ts"
import { makeHandOver, type HandOver } from "../streams/hand-over.ts"
import type { EndReason, NoticeBuffer } from "../streams/notice-buffer.ts"
import type { PushSink } from "../streams/push-sink.ts"
import type { OpenStreamsShape } from "../streams/open-streams.ts"
import { SSE_HEADERS } from "../../support/sse.ts"
import { legacyCatalogChangedFrames, legacyFrame, legacyUpdatedFrame } from "./notice-frames.ts"
import type { Session, SessionsShape } from "./sessions.ts"
import { may, type Principal } from "../../access/principal.ts"
import { uriOperation } from "../../access/operations.ts"

/**
 * GET-stream event ids are the stream and the durable position at once, so a resumed stream replays only what it
 * missed: `get-<log seq>` for a row's notice, `get-<log seq>.<base64url URI>` for a view's or a live query's (one
 * change can notify several).
 */
export const getStreamEventId = positionId
export const parseGetStreamEventId = parsePosition


type Updated = Notice & { readonly _tag: "Updated" }

/**
 * The stream as the registry, the session and OpenStreams see it: one object with shared methods (it lives as long
 * as the stream: bench/stream-memory.ts), and a hand-over only while a resumed stream replays.
 */
class SessionBuffer implements NoticeBuffer {
  handOver: HandOver<Updated> | undefined = undefined
  constructor(readonly sink: PushSink) {}
  deliver(notice: Notice) {
    if (notice._tag !== "Updated") return
    if (this.handOver === undefined) this.sink.enqueue(legacyFrame(notice))
    else this.handOver.offer(notice)
  }
  close(reason: EndReason) {
    this.sink.close(reason)
  }
  isClosed() {
    return this.sink.isClosed()
  }
  catalogChanged() {
    this.sink.enqueue(legacyCatalogChangedFrames)
  }
}

export interface SessionStreamDeps {
  readonly catalog: CompiledApp
  readonly sessions: SessionsShape
  readonly log: EventLogShape
  readonly rows: RowsShape
  readonly views: ViewsShape
  /** The keyed views, whose subscribed entries' last changes a replay announces (absent: none). */
  readonly keyed?: KeyedViewsShape
  readonly streams: OpenStreamsShape
  readonly settings: Settings
}

/**
 * The last change of each keyed view entry among `uris`, as of now. An entry that is gone (or cannot be read) has
 * none: its removal is not replayed, and the client that re-reads it finds it gone.
 */
const entrySeqs = (keyed: KeyedViewsShape | undefined, uris: Iterable<string>) =>
  Effect.gen(function* () {
    const seqs: Array<readonly [string, number]> = []
    if (keyed === undefined) return seqs
    for (const uri of uris) {
      const parsed = parseUri(uri)
      if (parsed?._tag !== "ViewEntry" || !parsed.canonical) continue
      const entry = yield* Effect.orElseSucceed(keyed.get(parsed.name, parsed.key), () => undefined)
      if (entry !== undefined) seqs.push([uri, entry.seq])
    }
    return seqs
  })

export const makeSessionStream = ({ catalog, sessions, log, rows, views, keyed, streams, settings }: SessionStreamDeps) =>
  (session: Session, lastEventId: string | undefined, client: string, principal?: Principal): EdgeResponse => {
    const from = parseGetStreamEventId(lastEventId)
    const start: Extract<EdgeResponse, { _tag: "Push" }>["start"] = (sink) =>
      Effect.gen(function* () {
        const buffer = new SessionBuffer(sink)
        // While the replay runs, live notices wait in the hand-over (bounded like the sink), then follow it in order.
        const handOver = from === undefined ? undefined : makeHandOver<Updated>({
          capacity: settings.streamBuffer,
          send: (notice) => sink.enqueue(legacyFrame(notice)),
          overflow: () => sink.close("overflow"),
          isClosed: () => sink.isClosed()
        })
        buffer.handOver = handOver
        // A session outlives a change of its principal's grants (its stream ended then): what it may no longer read
        // is dropped before anything is delivered or replayed.
        if (principal !== undefined) {
          for (const uri of sessions.snapshot(session).subscriptions.keys()) {
            const op = uriOperation(uri)
            if (op !== undefined && !may(principal, op)) {
              const dropped = yield* Effect.either(sessions.unsubscribe(session, uri))
              if (dropped._tag === "Left") return sink.close("store")
            }
          }
        }
        // Live delivery starts before the replay reads the log, so nothing falls between the two.
        yield* sessions.stream(session, buffer)
        yield* streams.track({ kind: "session", client, owner: session.id, since: rows.checkpoint(), subscriptions: () => [...sessions.snapshot(session).subscriptions.keys()], listChanges: false, principal }, buffer)
        if (handOver === undefined || from === undefined) return
        // The head and the views' last changes, read in one step: live notices after it come from the hand-over.
        const head = rows.checkpoint()
        const subscribed = sessions.snapshot(session).topics
        const viewSeqs = new Map([...views.all().map((v) => [viewUri(v.name), v.seq] as const), ...yield* entrySeqs(keyed, subscribed.keys())])
        // A store error during the replay ends the stream visibly, never skipping to live: the client then
        // resumes from the last id it got, so no notification is lost in between.
        const replayed = yield* resumeNotices(log, catalog, subscribed, from, head, viewSeqs).pipe(
          Stream.mapChunks((notices) => Chunk.of(Buffer.concat(Chunk.toReadonlyArray(notices).map(({ uri, seq }) => legacyUpdatedFrame(uri, seq))))),
          Stream.runForEach((frames) => (frames.length === 0 ? Effect.void : Effect.asVoid(sink.send(frames)))),
          Effect.as(true),
          Effect.catchAll((e) =>
            Effect.as(Effect.logWarning(
              `session ${session.id.slice(0, 8)}…: cannot replay its GET stream from the log (${e.reason}); closing the stream so that the client resumes`
            ), false))
        )
        if (!replayed) return sink.close("store")
        handOver.release((notice) => notice.seq > head)
        buffer.handOver = undefined
      })
    return { _tag: "Push", status: 200, headers: SSE_HEADERS, start, heartbeatMs: settings.heartbeatMs }
  }
