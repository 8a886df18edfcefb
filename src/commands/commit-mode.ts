/**
 * How a batch the writer wrote becomes visible and answered: chosen once, in runtime.ts, from where the log lives.
 *
 *   - Local (classic-level: this process is the only writer): the log writes the batch exactly as decided; the
 *     writer applies it through the projector (with the view records it stored beside it) and answers.
 *   - Shared (PostgreSQL: several nodes append): the log assigns seqs and create ids and refuses, entry by entry,
 *     what was decided against a stale row. A tailer applies every node's commits. When nothing of another node's
 *     came before a written batch (the tailer stands at its predecessor), the writer applies it at once and the
 *     tailer skips it; otherwise the tailer holds it, reads the other nodes' commits before it and applies it right
 *     after them (never reading it back), and the writer answers once it has (read-your-writes). Stale commands are
 *     decided again.
 */
import { Context, Effect, Either, Layer, Stream } from "effect"
import { type StoreError, StoreFailed, Contended } from "../domain/errors.ts"
import { rowUri } from "../domain/uri.ts"
import { Duplicate, EventLog, Stale, type AppendEntry, type AppendResult, type StoredKey } from "../log/event-log.ts"
import { makeProjector } from "../projections/projector.ts"
import { makeTailer, type TailerShape } from "../projections/tailer.ts"
import type { PreparedViews } from "../projections/views/views.ts"
import type { DecidedBatch } from "./decide-batch.ts"
import type { Decided, Queued } from "./submission.ts"

/** Shared log: how often one command may be refused as stale (other nodes keep writing its entity) before it fails. */
export const MAX_ATTEMPTS = 64

/** What became of a written batch: who to answer with what, and who to decide again. */
export interface Settled {
  /** The changes as the log wrote them; `answered` points into it. */
  readonly written: ReadonlyArray<Decided>
  readonly answered: ReadonlyArray<{ readonly p: Queued; readonly from: number; readonly to: number }>
  /** Answered from the idempotency key another writer stored meanwhile. */
  readonly replayed: ReadonlyArray<readonly [Queued, StoredKey]>
  readonly failed: ReadonlyArray<readonly [Queued, StoreError]>
  /** Decided again, first in the next batch. */
  readonly again: ReadonlyArray<Queued>
  /** The highest id per type among the creates written. */
  readonly counters: ReadonlyMap<string, number>
  /** The log's head after the write. */
  readonly head: number
}

interface Mode {
  /** The views' records to store with the batch (Local), or undefined (Shared: each node's tailer folds them). */
  readonly prepare: (batch: DecidedBatch) => PreparedViews | undefined
  /** The batch is durable: make it visible on this node and say who gets which answer. */
  readonly settle: (batch: DecidedBatch, result: AppendResult | void, prepared: PreparedViews | undefined) => Effect.Effect<Settled>
  /** After a failed write: apply what the log holds beyond `afterSeq` (a failed batch that landed after all). */
  readonly resync: (afterSeq: number) => Effect.Effect<void, StoreError>
  /** Before deciding commands refused against rows that may lag: bring the rows to the log's head. */
  readonly catchUp: Effect.Effect<void>
}

export interface LocalMode extends Mode {
  readonly _tag: "Local"
}

export interface SharedMode extends Mode {
  readonly _tag: "Shared"
  /** The tailer: how far this node has applied the log, and whether the log lost a commit it applied. */
  readonly tailer: TailerShape
}

export type CommitModeShape = LocalMode | SharedMode

export class CommitMode extends Context.Tag("writeonce/CommitMode")<CommitMode, CommitModeShape>() {}

/** Every waiter of a single-writer batch gets its decided changes, as they were written. */
const answerAll = (batch: DecidedBatch) => {
  const answered: Array<{ readonly p: Queued; readonly from: number; readonly to: number }> = []
  for (let w = 0, i = 0; w < batch.waiters.length; i += batch.spans[w], w++) answered.push({ p: batch.waiters[w], from: i, to: i + batch.spans[w] })
  return answered
}

export const makeLocalMode = Effect.gen(function* () {
  const log = yield* EventLog
  const projector = yield* makeProjector
  return {
    _tag: "Local",
    prepare: (batch) => projector.prepare(batch.changes),
    settle: (batch, _result, prepared) =>
      Effect.as(projector.apply(batch.changes, prepared), {
        written: batch.changes,
        answered: answerAll(batch),
        replayed: [],
        failed: [],
        again: [],
        counters: batch.moved,
        head: batch.changes[batch.changes.length - 1].event.seq
      }),
    resync: (afterSeq) =>
      Effect.gen(function* () {
        const landed = projector.fold(yield* Stream.runCollect(log.readFrom(afterSeq + 1)))
        if (landed.length === 0) return
        yield* Effect.logWarning(`the failed write's ${landed.length} events reached the disk after all; applying them`)
        // Their view records landed with them: the same fold gives the same values.
        yield* projector.apply(landed)
      }),
    catchUp: Effect.void
  } satisfies LocalMode
})

/**
 * A shared log's answer to a batch, entry by entry: written entries are answered as written, a command refused
 * as stale is decided again (up to MAX_ATTEMPTS), one whose key was stored meanwhile gets the stored answer.
 */
export const settleOutcomes = (batch: DecidedBatch, result: AppendResult) => {
  const { outcomes, replays } = result
  const written: Array<Decided> = []
  const answered: Array<{ readonly p: Queued; readonly from: number; readonly to: number }> = []
  const replayed: Array<readonly [Queued, StoredKey]> = []
  const failed: Array<readonly [Queued, StoreError]> = []
  const again: Array<Queued> = []
  const counters = new Map<string, number>()
  const { waiters, spans, changes } = batch
  for (let w = 0, i = 0; w < waiters.length; i += spans[w], w++) {
    const p = waiters[w]
    let stale = 0
    let duplicate = 0
    for (let k = i; k < i + spans[w]; k++) {
      if (outcomes[k] === Stale) stale++
      else if (outcomes[k] === Duplicate) duplicate++
    }
    if (duplicate > 0) {
      // Its key was stored meanwhile (another node, or an attempt that failed here but landed): that answer stands.
      const stored = p.idempotency === undefined ? undefined : replays?.get(p.idempotency.key)
      if (stored === undefined || duplicate < spans[w]) {
        failed.push([p, new StoreFailed({ reason: "the log refused a write as a duplicate without its stored answer" })])
      } else replayed.push([p, stored])
      continue
    }
    if (stale > 0 && stale < spans[w]) {
      // A log that breaks the contract (a command's entries all written or all stale): never answer it as done.
      failed.push([p, new StoreFailed({ reason: `the log wrote ${spans[w] - stale} of the ${spans[w]} events of one command` })])
      continue
    }
    // An app command's entries are written all or none (the log refuses the whole group): it is decided again.
    if (stale > 0) {
      if (++p.attempts >= MAX_ATTEMPTS) {
        const what = p.kind === "command" ? `the command ${p.command.name}'s rows` : `${p.type.name} ${p.id ?? ""}`
        failed.push([p, new Contended({ reason: `${what} kept changing on other nodes (${MAX_ATTEMPTS} attempts); retry` })])
      } else again.push(p)
      continue
    }
    const from = written.length
    for (let k = i; k < i + spans[w]; k++) {
      const o = outcomes[k] as AppendEntry
      const c = changes[k]
      written.push(o.event === c.event ? c : { event: o.event, row: o.row, rowJson: o.rowJson ?? null, before: c.before, uri: rowUri(o.event.type, o.event.id) })
      if (o.event.kind === "created") counters.set(o.event.type, Math.max(counters.get(o.event.type) ?? 0, Number(o.event.id)))
    }
    answered.push({ p, from, to: written.length })
  }
  return { written, answered, replayed, failed, again, counters, head: result.lastSeq }
}

export const makeSharedMode = Effect.gen(function* () {
  const log = yield* EventLog
  const tailer = yield* makeTailer
  return {
    _tag: "Shared",
    tailer,
    prepare: () => undefined,
    settle: (batch, result) =>
      Effect.gen(function* () {
        if (result === undefined) return yield* Effect.dieMessage("the Shared commit mode needs a log that answers what it wrote")
        const settled = settleOutcomes(batch, result)
        // Nothing of another node's came before this batch: apply it here. Else the tailer applies it right after
        // the others' commits before it; either way it is not read back.
        const { written, head } = settled
        if (written.length > 0 && written[written.length - 1].event.seq === head && (yield* tailer.applyOwn(written))) return settled
        const caught = yield* Effect.either(tailer.reached(head))
        // The writes are durable whatever happens here: they are acknowledged, without read-your-writes this once.
        if (Either.isLeft(caught)) yield* Effect.logWarning(`acknowledging durable writes this node has not applied yet: ${caught.left.reason}`)
        return settled
      }),
    // The tailer applies whatever landed (this node's or another's).
    resync: () => Effect.void,
    catchUp: Effect.flatMap(Effect.either(Effect.flatMap(log.head, (h) => tailer.reached(h.lastSeq))), (caught) =>
      Either.isLeft(caught) ? Effect.logWarning(`cannot catch up with the shared log before deciding again: ${caught.left.reason}`) : Effect.void)
  } satisfies SharedMode
})

/** This process is the log's only writer (classic-level). */
export const LocalCommit = Layer.effect(CommitMode, makeLocalMode)
/** Several nodes write the log (PostgreSQL): a tailer follows it. */
export const SharedCommit = Layer.scoped(CommitMode, makeSharedMode)
