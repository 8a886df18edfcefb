/**
 * A legacy session's GET stream (L5, L7): replay from the durable log after Last-Event-ID, then live; bounded;
 * one per session (a second GET replaces the first).
 */
import { Effect, Option, Stream } from "effect"
import type { Settings } from "../../config.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import { viewUri } from "../../domain/uri.ts"
import type { EventLogShape } from "../../log/event-log.ts"
import { parsePosition, positionId, resumeNotices } from "../../projections/resumption.ts"
import type { RowsShape } from "../../projections/rows.ts"
import type { ViewsShape } from "../../projections/views.ts"
import type { EdgeResponse } from "../edge-types.ts"
import { makeNoticeBuffer } from "../notice-buffer.ts"
import type { OpenStreamsShape } from "../open-streams.ts"
import { SSE_HEADERS, sseFrame } from "../sse.ts"
import type { Session, SessionsShape } from "./sessions.ts"

/**
 * GET-stream event ids are the stream and the durable position at once (L7): `get-<log seq>` for a row's
 * notice, `get-<log seq>.<base64url URI>` for a view's or a live query's (one change can notify several).
 */
export const getStreamEventId = positionId
export const parseGetStreamEventId = parsePosition

export const SESSION_HEADER = "mcp-session-id"

export interface SessionStreamDeps {
  readonly catalog: CompiledApp
  readonly sessions: SessionsShape
  readonly log: EventLogShape
  readonly rows: RowsShape
  readonly views: ViewsShape
  readonly streams: OpenStreamsShape
  readonly settings: Settings
}

export const makeSessionStream = ({ catalog, sessions, log, rows, views, streams, settings }: SessionStreamDeps) => {
  const updatedFrame = (uri: string, seq: number) =>
    sseFrame({
      id: getStreamEventId(seq, uri),
      event: "message",
      data: JSON.stringify({ jsonrpc: "2.0", method: "notifications/resources/updated", params: { uri } })
    })

  return (session: Session, lastEventId: string | undefined): EdgeResponse => {
    const from = parseGetStreamEventId(lastEventId)
    const events = Stream.unwrapScoped(
      Effect.gen(function* () {
        const buffer = yield* makeNoticeBuffer(settings.streamBuffer)
        // Live delivery starts before the replay reads the log, so nothing falls between the two.
        yield* Effect.acquireRelease(Effect.sync(() => sessions.attach(session, buffer)), () => Effect.sync(() => sessions.detach(session, buffer)))
        yield* streams.track({ kind: "session", owner: session.id, since: rows.checkpoint(), subscriptions: () => [...session.subscriptions.keys()], listChanges: false }, buffer)
        // The head and the views' last changes, read in one step: live notices after it come from the buffer.
        const head = rows.checkpoint()
        const viewSeqs = new Map(views.all().map((v) => [viewUri(v.name), v.seq]))
        // A store error during the replay ends the stream visibly, never skipping to live: the client then
        // resumes from the last id it got, so no notification is lost in between.
        let replayFailed = false
        const replay = from === undefined
          ? Stream.empty
          : resumeNotices(log, catalog, new Map(session.subscriptions), from, head, viewSeqs).pipe(
            Stream.map(({ uri, seq }) => updatedFrame(uri, seq)),
            Stream.catchAll((e) => {
              replayFailed = true
              return Stream.drain(Stream.fromEffect(Effect.logWarning(
                `session ${session.id.slice(0, 8)}…: cannot replay its GET stream from the log (${e.reason}); closing the stream so that the client resumes`
              )))
            })
          )
        const live = buffer.items.pipe(
          Stream.filterMap((item) => (item._tag === "Updated" && item.seq > head ? Option.some(updatedFrame(item.uri, item.seq)) : Option.none()))
        )
        return Stream.concat(replay, Stream.suspend(() => (replayFailed ? Stream.empty : live)))
      })
    )
    return { _tag: "Stream", status: 200, headers: { ...SSE_HEADERS, [SESSION_HEADER]: session.id }, events, heartbeatMs: settings.heartbeatMs }
  }
}
