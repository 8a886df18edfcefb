/**
 * The messages of a request that reports progress, on its own response stream only: one `notifications/progress` per
 * real stage of the command (accepted, decided, durable), then the response, then the end. The call runs in the
 * stream's scope, so a client closing the stream cancels it. Each element is one JSON-RPC message as JSON text; the
 * transport frames them as SSE.
 */
import { Effect, Queue, Stream } from "effect"
import type { Stage } from "../../commands/commands.ts"
import { Notification, notificationMessage } from "./protocol.ts"

const STAGES: ReadonlyArray<Stage> = ["accepted", "decided", "durable"]

export interface ProgressCall<A, E> {
  readonly token: string | number
  readonly run: (onStage: (stage: Stage) => void) => Effect.Effect<A, E>
  /** The final JSON-RPC message, as JSON text, for the call's outcome. */
  readonly respond: (outcome: Effect.Effect<A, E>) => Effect.Effect<string>
}

export const progressMessages = <A, E>(call: ProgressCall<A, E>): Stream.Stream<string> =>
  Stream.unwrapScoped(
    Effect.gen(function* () {
      const queue = yield* Queue.unbounded<string | null>()
      const onStage = (stage: Stage) =>
        queue.unsafeOffer(JSON.stringify(notificationMessage(Notification.progress, {
          progressToken: call.token,
          progress: STAGES.indexOf(stage) + 1,
          total: STAGES.length,
          message: stage
        })))
      yield* call.respond(call.run(onStage)).pipe(
        Effect.flatMap((message) => Queue.offerAll(queue, [message, null])),
        Effect.forkScoped
      )
      return Stream.fromQueue(queue).pipe(Stream.takeWhile((m): m is string => m !== null))
    })
  )
