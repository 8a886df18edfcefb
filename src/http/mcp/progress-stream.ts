/**
 * A request answered as SSE because it reports progress (C4, M9): one `notifications/progress` per real
 * stage of the command (accepted, decided, durable), then the response, then the stream ends. The call runs
 * in the stream's scope, so a client closing the stream cancels it (M7).
 */
import { Effect, Queue, Stream } from "effect"
import type { Stage } from "../../commands/group-commit.ts"
import { sseFrame } from "../sse.ts"
import type { Outcome } from "./dispatch.ts"
import type { RpcError } from "./rpc.ts"

const STAGES: ReadonlyArray<Stage> = ["accepted", "decided", "durable"]

export interface ProgressCall {
  readonly token: string | number
  readonly run: (onStage: (stage: Stage) => void) => Effect.Effect<Outcome, RpcError>
  /** The final JSON-RPC message for the outcome. */
  readonly respond: (outcome: Effect.Effect<Outcome, RpcError>) => Effect.Effect<unknown>
  /** Ids for the events (legacy resumability); none on the modern era. */
  readonly eventId?: (n: number) => string
  /** 2025-11-25: open with an event that has an id and empty data. */
  readonly priming: boolean
}

export const progressStream = (call: ProgressCall): Stream.Stream<string> =>
  Stream.unwrapScoped(
    Effect.gen(function* () {
      const queue = yield* Queue.unbounded<string | null>()
      let n = 0
      const frame = (data: string) => sseFrame({ id: call.eventId?.(++n), event: "message", data })
      const onStage = (stage: Stage) =>
        queue.unsafeOffer(frame(JSON.stringify({
          jsonrpc: "2.0",
          method: "notifications/progress",
          params: { progressToken: call.token, progress: STAGES.indexOf(stage) + 1, total: STAGES.length, message: stage }
        })))
      yield* call.respond(call.run(onStage)).pipe(
        Effect.flatMap((message) => Queue.offerAll(queue, [frame(JSON.stringify(message)), null])),
        Effect.forkScoped
      )
      const priming = call.priming ? Stream.make(sseFrame({ id: call.eventId?.(0), data: "" })) : Stream.empty
      return Stream.concat(priming, Stream.fromQueue(queue).pipe(Stream.takeWhile((f): f is string => f !== null)))
    })
  )
