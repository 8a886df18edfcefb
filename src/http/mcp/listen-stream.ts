/**
 * A modern `subscriptions/listen` stream (M6), once its params are checked: the ack first, then only the
 * requested notice types, each tagged with the listen request's id; bounded; counted per client and in all.
 */
import { Effect, Either, Option, Stream } from "effect"
import type { Settings } from "../../config.ts"
import type { RegistryShape } from "../../projections/registry.ts"
import type { RowsShape } from "../../projections/rows.ts"
import type { EdgeResponse } from "../edge-types.ts"
import { makeNoticeBuffer } from "../notice-buffer.ts"
import type { OpenStreamsShape } from "../open-streams.ts"
import { SSE_HEADERS, sseFrame } from "../sse.ts"
import { ErrorCode, META } from "./protocol.ts"
import { resultMessage, RpcError, type RpcId } from "./rpc.ts"

export interface ListenRequest {
  readonly id: RpcId
  /** The caller's source address, for the per-client cap. */
  readonly client: string
  readonly uris: ReadonlyArray<string>
  readonly listChanges: boolean
  /** What the ack says was honoured. */
  readonly honoured: object
}

export interface ListenStreamDeps {
  readonly registry: RegistryShape
  readonly rows: RowsShape
  readonly streams: OpenStreamsShape
  readonly settings: Settings
  /** The `_meta` every modern result carries (serverInfo). */
  readonly resultMeta: object
}

export const makeListenStreams = ({ registry, rows, streams, settings, resultMeta }: ListenStreamDeps) => {
  const listensByClient = new Map<string, number>()
  let listens = 0
  const countListen = (client: string, delta: number) => {
    listens += delta
    const n = (listensByClient.get(client) ?? 0) + delta
    if (n === 0) listensByClient.delete(client)
    else listensByClient.set(client, n)
  }

  return ({ id, client, uris, listChanges, honoured }: ListenRequest): Either.Either<EdgeResponse, RpcError> => {
    if ((listensByClient.get(client) ?? 0) >= settings.maxListensPerClient || listens >= settings.maxListenStreams) {
      return Either.left(new RpcError({
        code: ErrorCode.InvalidRequest,
        message: `too many open listen streams (WO_MAX_LISTENS_PER_CLIENT=${settings.maxListensPerClient}, WO_MAX_LISTEN_STREAMS=${settings.maxListenStreams})`,
        status: 429
      }))
    }
    const tag = { [META.subscriptionId]: id }
    const message = (method: string, params: object = {}) =>
      sseFrame({ event: "message", data: JSON.stringify({ jsonrpc: "2.0", method, params: { ...params, _meta: tag } }) })
    const events = Stream.unwrapScoped(
      Effect.gen(function* () {
        const buffer = yield* makeNoticeBuffer(settings.streamBuffer)
        yield* Effect.acquireRelease(Effect.sync(() => countListen(client, 1)), () => Effect.sync(() => countListen(client, -1)))
        yield* Effect.acquireRelease(
          Effect.sync(() => {
            for (const uri of uris) registry.add(uri, buffer)
            if (listChanges) registry.watchLists(buffer)
          }),
          () =>
            Effect.sync(() => {
              for (const uri of uris) registry.remove(uri, buffer)
              if (listChanges) registry.unwatchLists(buffer)
            })
        )
        yield* streams.track({ kind: "listen", owner: String(id), since: rows.checkpoint(), subscriptions: () => uris, listChanges }, buffer)
        const ack = Stream.make(message("notifications/subscriptions/acknowledged", { notifications: honoured }))
        const live = buffer.items.pipe(
          Stream.filterMap((item) => {
            switch (item._tag) {
              case "Updated":
                return Option.some(message("notifications/resources/updated", { uri: item.uri }))
              case "ListChanged":
                return Option.some(message("notifications/resources/list_changed"))
              case "End":
                // A graceful close (shutdown) ends with the listen request's result; overflow just closes.
                return item.reason === "shutdown"
                  ? Option.some(sseFrame({ event: "message", data: JSON.stringify(resultMessage(id, { resultType: "complete", _meta: { ...tag, ...resultMeta } })) }))
                  : Option.none()
            }
          })
        )
        return Stream.concat(ack, live)
      })
    )
    return Either.right<EdgeResponse>({ _tag: "Stream", status: 200, headers: SSE_HEADERS, events, heartbeatMs: settings.heartbeatMs })
  }
}
