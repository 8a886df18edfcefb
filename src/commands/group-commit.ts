/**
 * The group-commit fiber: the single writer. It drains the queue of pending commands, decides each against
 * the current rows (plus earlier decisions in the same batch), writes the whole batch with one durable write,
 * applies the projection, publishes the changes, and only then completes every waiter.
 *
 * Deciding inside the writer is what serialises concurrent commands on one entity without locks or retries:
 * 100 concurrent `set_price` calls on one product become versions 2..101, usually in one fsync.
 */
import { Chunk, Context, Deferred, Effect, Either, Exit, Fiber, Layer, Queue } from "effect"
import type { Row } from "../domain/catalog.ts"
import type { CompiledType } from "../domain/compile.ts"
import { decide, evolve, type Intent } from "../domain/decider.ts"
import { StoreUnavailable, type CommandError } from "../domain/errors.ts"
import { streamKey, type Change, type StoredEvent } from "../domain/events.ts"
import { rowUri } from "../domain/uri.ts"
import { WoConfig } from "../config.ts"
import { ChangeFeed } from "../projections/change-feed.ts"
import { Rows } from "../projections/rows.ts"
import { EventLog } from "./event-log.ts"

/** Where a command is, reported to callers that stream progress (MCP progressToken). */
export type Stage = "accepted" | "decided" | "durable"

export interface Submission {
  readonly type: CompiledType
  /** Absent for a create: the writer assigns the next id of the type. */
  readonly id?: string
  readonly intent: Intent
  readonly expectedVersion?: number
  readonly onStage?: (stage: Stage) => void
}

export interface Committed {
  readonly event: StoredEvent
  /** The row after the command; null after a delete. */
  readonly row: Row | null
}

interface Pending extends Submission {
  readonly deferred: Deferred.Deferred<Committed, CommandError>
}

export interface GroupCommitShape {
  /** Queues the command and waits until its event is durable (or it is refused). */
  readonly submit: (submission: Submission) => Effect.Effect<Committed, CommandError>
}

export class GroupCommit extends Context.Tag("writeonce/GroupCommit")<GroupCommit, GroupCommitShape>() {}

export const makeGroupCommit = Effect.gen(function* () {
  const log = yield* EventLog
  const rows = yield* Rows
  const feed = yield* ChangeFeed
  const settings = yield* WoConfig
  const maxBatch = settings.groupCommit ? settings.maxBatch : 1
  const head = yield* log.head
  let lastSeq = head.lastSeq
  const counters = new Map(head.counters)
  const queue = yield* Queue.bounded<Pending>(Math.max(1024, maxBatch * 16))
  let closing = false

  const commitBatch = (batch: Chunk.Chunk<Pending>) =>
    Effect.gen(function* () {
      const overlay = new Map<string, Row | null>()
      const moved = new Map<string, number>()
      const changes: Array<Change> = []
      const waiters: Array<Pending> = []
      const firstSeq = lastSeq
      const at = Date.now()
      for (const p of batch) {
        const type = p.type.name
        let id = p.id ?? ""
        if (p.intent._tag === "Create") {
          const n = (moved.get(type) ?? counters.get(type) ?? 0) + 1
          moved.set(type, n)
          id = String(n)
        }
        const key = streamKey(type, id)
        const current = overlay.has(key) ? overlay.get(key) ?? undefined : rows.get(type, id)
        const decision = decide(p.type, id, current, p.intent, p.expectedVersion)
        if (Either.isLeft(decision)) {
          Deferred.unsafeDone(p.deferred, Exit.fail(decision.left))
          continue
        }
        const event: StoredEvent = { seq: ++lastSeq, at, type, id, version: (current?.version ?? 0) + 1, ...decision.right }
        const row = evolve(current, event) ?? null
        overlay.set(key, row)
        changes.push({ event, row, uri: rowUri(type, id) })
        waiters.push(p)
        p.onStage?.("decided")
      }
      if (changes.length === 0) return
      const written = yield* Effect.either(log.append({ entries: changes, counters: moved }))
      if (Either.isLeft(written)) {
        // No ack without durability: the whole batch fails and its sequence numbers are reused.
        lastSeq = firstSeq
        yield* Effect.logError(`durable write failed for ${changes.length} events: ${written.left.reason}`)
        for (const p of waiters) Deferred.unsafeDone(p.deferred, Exit.fail(written.left))
        return
      }
      for (const [type, n] of moved) counters.set(type, n)
      rows.apply(changes)
      feed.publish(changes)
      for (let i = 0; i < waiters.length; i++) {
        waiters[i].onStage?.("durable")
        Deferred.unsafeDone(waiters[i].deferred, Exit.succeed(changes[i]))
      }
    }).pipe(Effect.uninterruptible)

  const writer = yield* Effect.forkDaemon(
    Effect.forever(Effect.flatMap(Queue.takeBetween(queue, 1, maxBatch), commitBatch))
  )

  // Shutdown: refuse new commands, let the batch in flight finish, flush what is queued, then stop.
  yield* Effect.addFinalizer(() =>
    Effect.gen(function* () {
      closing = true
      yield* Fiber.interrupt(writer)
      let rest = yield* Queue.takeAll(queue)
      while (Chunk.size(rest) > 0) {
        yield* commitBatch(Chunk.take(rest, maxBatch))
        rest = Chunk.drop(rest, maxBatch)
      }
      yield* Queue.shutdown(queue)
    }))

  return GroupCommit.of({
    submit: (submission) =>
      Effect.suspend(() => {
        if (closing) return Effect.fail(new StoreUnavailable({ reason: "the server is shutting down" }))
        const deferred = Deferred.unsafeMake<Committed, CommandError>(writer.id())
        submission.onStage?.("accepted")
        return Effect.zipRight(Queue.offer(queue, { ...submission, deferred }), Deferred.await(deferred))
      })
  })
})

export const GroupCommitLive = Layer.scoped(GroupCommit, makeGroupCommit)
