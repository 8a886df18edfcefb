/**
 * A modern `subscriptions/listen` stream, once its params are checked: the ack first, then only the
 * requested notice types, each tagged with the listen request's id; bounded; counted per client and in all
 * (open-streams.ts holds the caps).
 * Live notices go straight to the push sink as two parts: the notice's prefix, shared by every listen stream, and
 * this stream's id with the suffix every frame ends with (notice-frames.ts).
 */
import { Effect, Either } from "effect"
import type { Settings } from "../../support/config.ts"
import type { Topic } from "../../subscriptions/live-queries.ts"
import type { RegistryShape } from "../../subscriptions/registry.ts"
import type { RowsShape } from "../../projections/rows/rows.ts"
import type { EdgeResponse } from "../edge/edge-types.ts"
import type { EndReason, NoticeBuffer } from "../streams/notice-buffer.ts"
import type { Notice } from "../../subscriptions/registry.ts"
import type { CloseReason, PushSink } from "../streams/push-sink.ts"
import type { OpenStreamsShape } from "../streams/open-streams.ts"
import type { Principal } from "../../access/principal.ts"
import { SSE_HEADERS, sseFrame } from "../../support/sse.ts"
import { modernParts, modernSplice, subscriptionIdBytes, subscriptionTail } from "./notice-frames.ts"
import { ErrorCode, META, Notification, resultMessage, RpcError, type RpcId } from "./protocol.ts"

export interface ListenRequest {
  readonly id: RpcId
  /** The caller's source address, for the per-client cap. */
  readonly client: string
  /** The URIs to follow, each read once by the dispatcher. */
  readonly topics: ReadonlyArray<Topic>
  readonly listChanges: boolean
  /** Asked for notifications/tools/list_changed, and honoured (only wo dev ever changes the tools). */
  readonly toolsListChanges?: boolean
  /** What the ack says was honoured. */
  readonly honoured: object
  /** Who listens: the stream ends when the principal is revoked. */
  readonly principal?: Principal
}

export interface ListenStreamDeps {
  readonly registry: RegistryShape
  readonly rows: RowsShape
  readonly streams: OpenStreamsShape
  readonly settings: Settings
  /** The `_meta` every modern result carries (serverInfo). */
  readonly resultMeta: object
}

/**
 * The stream as the registry and OpenStreams see it: one object whose methods are shared by every listen stream,
 * rather than a closure each (it lives as long as the stream: bench/stream-memory.ts, heap per open stream).
 */
class ListenBuffer implements NoticeBuffer {
  constructor(
    readonly sink: PushSink,
    /** The id and the suffix every modern frame ends with, in one buffer (notice-frames.ts): a frame is two parts. */
    readonly tail: Buffer,
    readonly listChanges: boolean,
    readonly toolsListChanges: boolean
  ) {}
  deliver(notice: Notice) {
    this.sink.enqueue(modernParts(notice)[0], this.tail)
  }
  close(reason: EndReason) {
    this.sink.close(reason)
  }
  isClosed() {
    return this.sink.isClosed()
  }
  catalogChanged() {
    if (this.toolsListChanges) this.notify(Notification.toolListChanged)
    if (this.listChanges) this.notify(Notification.resourceListChanged)
  }
  notify(method: string) {
    this.sink.enqueue(modernSplice(method, {})[0], this.tail)
  }
}

/*
 * What an open listen stream keeps beyond its ListenBuffer are these two closures: made here, out of the request's
 * scope, they keep only what they name (made inline, they kept the request's topics, ack and `start` too).
 */

/** A graceful close (shutdown) ends with the listen request's result; overflow just closes. */
const listenFarewell = (id: RpcId, resultMeta: object) => (reason: CloseReason) =>
  reason === "shutdown"
    ? sseFrame({ event: "message", data: JSON.stringify(resultMessage(id, { resultType: "complete", _meta: { [META.subscriptionId]: id, ...resultMeta } })) })
    : undefined

const fixedList = (uris: ReadonlyArray<string>) => () => uris

export const makeListenStreams = ({ registry, rows, streams, settings, resultMeta }: ListenStreamDeps) =>
  ({ id, client, topics, listChanges, toolsListChanges, honoured, principal }: ListenRequest): Either.Either<EdgeResponse, RpcError> => {
    if (streams.full("listen", client)) {
      return Either.left(new RpcError({
        code: ErrorCode.InvalidRequest,
        message: `too many open listen streams (WO_MAX_LISTENS_PER_CLIENT=${settings.maxListensPerClient}, WO_MAX_LISTEN_STREAMS=${settings.maxListenStreams})`
      }))
    }
    const start: Extract<EdgeResponse, { _tag: "Push" }>["start"] = (sink) =>
      Effect.gen(function* () {
        const tail = subscriptionTail(subscriptionIdBytes(id as string | number))
        const buffer = new ListenBuffer(sink, tail, listChanges, toolsListChanges === true)
        sink.farewell(listenFarewell(id, resultMeta))
        yield* streams.track({ kind: "listen", client, owner: String(id), since: rows.checkpoint(), subscriptions: fixedList(topics.map((t) => t.uri)), listChanges, principal }, buffer)
        sink.enqueue(modernSplice("notifications/subscriptions/acknowledged", { notifications: honoured })[0], tail)
        yield* registry.subscribe(buffer, topics, listChanges)
      })
    return Either.right<EdgeResponse>({ _tag: "Push", status: 200, headers: SSE_HEADERS, start, heartbeatMs: settings.heartbeatMs })
  }
