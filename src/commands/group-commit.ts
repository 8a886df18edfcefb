/**
 * The group-commit fiber: the single writer. It drains the queue of pending commands, decides each against
 * the current rows (plus earlier decisions in the same batch), writes the whole batch with one durable write,
 * applies the projection, publishes the changes, and only then completes every waiter.
 *
 * Deciding inside the writer is what serialises concurrent commands on one entity without locks or retries:
 * 100 concurrent `set_price` calls on one product become versions 2..101, usually in one fsync.
 */
import { Context, Effect, Either, Exit, Fiber, Layer } from "effect"
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
  /** The row serialised once, for the store and for the response alike. */
  readonly rowJson: string | null
}

interface Pending extends Submission {
  readonly resume: (exit: Exit.Exit<Committed, CommandError>) => void
  /** The caller went away before the writer took the command: skip it. */
  cancelled: boolean
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
  const maxPending = Math.max(1024, maxBatch * 16)
  const head = yield* log.head
  let lastSeq = head.lastSeq
  const counters = new Map(head.counters)
  // A plain array and one wake-up callback: per command, no queue or deferred allocation and no fiber hop.
  let pending: Array<Pending> = []
  let wake: (() => void) | undefined
  let closing = false

  const commitBatch = (batch: ReadonlyArray<Pending>) =>
    Effect.gen(function* () {
      const overlay = new Map<string, Row | null>()
      const moved = new Map<string, number>()
      const changes: Array<Change & { readonly rowJson: string | null }> = []
      const waiters: Array<Pending> = []
      const firstSeq = lastSeq
      const at = Date.now()
      for (const p of batch) {
        if (p.cancelled) continue
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
          p.resume(Exit.fail(decision.left))
          continue
        }
        const event: StoredEvent = { seq: ++lastSeq, at, type, id, version: (current?.version ?? 0) + 1, ...decision.right }
        const row = evolve(current, event) ?? null
        overlay.set(key, row)
        changes.push({ event, row, rowJson: row === null ? null : JSON.stringify(row), uri: rowUri(type, id) })
        waiters.push(p)
        p.onStage?.("decided")
      }
      if (changes.length === 0) return
      const written = yield* Effect.either(log.append({ entries: changes, counters: moved }))
      if (Either.isLeft(written)) {
        // No ack without durability: the whole batch fails and its sequence numbers are reused.
        lastSeq = firstSeq
        yield* Effect.logError(`durable write failed for ${changes.length} events: ${written.left.reason}`)
        for (const p of waiters) p.resume(Exit.fail(written.left))
        return
      }
      for (const [type, n] of moved) counters.set(type, n)
      rows.apply(changes)
      feed.publish(changes)
      for (let i = 0; i < waiters.length; i++) {
        waiters[i].onStage?.("durable")
        waiters[i].resume(Exit.succeed(changes[i]))
      }
    }).pipe(Effect.uninterruptible)

  const takeBatch = () => {
    const batch = pending.length <= maxBatch ? pending : pending.slice(0, maxBatch)
    pending = pending.length <= maxBatch ? [] : pending.slice(maxBatch)
    return batch
  }
  const nextBatch = Effect.async<ReadonlyArray<Pending>>((resume) => {
    if (pending.length > 0) return resume(Effect.sync(takeBatch))
    wake = () => {
      wake = undefined
      resume(Effect.sync(takeBatch))
    }
    return Effect.sync(() => {
      wake = undefined
    })
  })

  const writer = yield* Effect.forkDaemon(Effect.forever(Effect.flatMap(nextBatch, commitBatch)))

  // Shutdown: refuse new commands, let the batch in flight finish, flush what is queued, then stop.
  yield* Effect.addFinalizer(() =>
    Effect.gen(function* () {
      closing = true
      yield* Fiber.interrupt(writer)
      while (pending.length > 0) yield* commitBatch(takeBatch())
    }))

  return GroupCommit.of({
    submit: (submission) =>
      Effect.async<Committed, CommandError>((resume) => {
        if (closing) return resume(Effect.fail(new StoreUnavailable({ reason: "the server is shutting down" })))
        if (pending.length >= maxPending) return resume(Effect.fail(new StoreUnavailable({ reason: "too many commands queued; retry" })))
        const p: Pending = { ...submission, resume: (exit) => resume(exit), cancelled: false }
        submission.onStage?.("accepted")
        pending.push(p)
        wake?.()
        // An interrupted caller (client gone) is skipped if the writer has not taken its command yet.
        return Effect.sync(() => {
          p.cancelled = true
        })
      })
  })
})

export const GroupCommitLive = Layer.scoped(GroupCommit, makeGroupCommit)
