/**
 * The group-commit fiber: the single writer. It drains the queue of pending commands, decides each against
 * the current rows (plus earlier decisions in the same batch), writes the whole batch with one durable write,
 * applies the projection, publishes the changes, and only then completes every waiter.
 *
 * Deciding inside the writer is what serialises concurrent commands on one entity without locks or retries:
 * 100 concurrent `set_price` calls on one product become versions 2..101, usually in one fsync.
 *
 * On a shared log (several nodes, PostgreSQL) this node's rows may lag the log. The log then assigns seqs and
 * create ids itself and refuses, entry by entry, what was decided against a row another node has moved on; the
 * writer waits until its tailer has applied the log that far and decides those commands again (one with a
 * stale explicit expected version then fails alone, with the usual conflict). A command refused here as not
 * found or conflicting is also decided once more against a caught-up row before it is answered. The tailer,
 * not the writer, applies every commit to the rows and the change feed; a caller is answered once this node's
 * rows include its write (read-your-writes).
 *
 * An app command (a command across entity types) is one submission: the writer runs its `decide` against the
 * batch so far (command-decider.ts), decides each of its changes as the single-row write would (`decideOne`), and
 * adds all of its events to the batch or none (a refusal leaves the batch untouched). One batch is one atomic
 * write, so they land together; a shared log refuses the command's entries as one group, and the writer then
 * decides the whole command again once caught up.
 */
import { Cause, Context, Deferred, Effect, Either, Exit, Fiber, Layer, Option, Stream } from "effect"
import type { Row } from "../domain/catalog.ts"
import type { CompiledApp, CompiledType } from "../domain/compile.ts"
import type { CompiledCommand } from "../domain/compile-commands.ts"
import { commandFailed, planCommand } from "../domain/command-decider.ts"
import { decide, evolve, type Intent } from "../domain/decider.ts"
import { MethodFailed, StoreUnavailable, type CommandError } from "../domain/errors.ts"
import { streamKey, type Change, type StoredEvent } from "../domain/events.ts"
import { rowUri } from "../domain/uri.ts"
import { describeThrown, traceOf } from "../domain/user-code.ts"
import { WoConfig } from "../config.ts"
import { referenceRefusal, type Overlay } from "./reference-check.ts"
import { ChangeFeed } from "../projections/change-feed.ts"
import { Rows } from "../projections/rows.ts"
import { Views, type PreparedViews } from "../projections/views.ts"
import { Duplicate, EventLog, Stale, type AppendEntry, type KeyClaim, type StoredKey } from "../log/event-log.ts"
import { commandFromChanges, storedChanges, type Keyed } from "./idempotency.ts"
import { Tailer } from "../projections/tailer.ts"
import { Metrics, metricsOff } from "../metrics/metrics.ts"

/** Where a command is, reported to callers that stream progress (MCP progressToken). */
export type Stage = "accepted" | "decided" | "durable"

export interface Submission {
  readonly type: CompiledType
  /** Absent for a create: the writer assigns the next id of the type. */
  readonly id?: string
  readonly intent: Intent
  readonly expectedVersion?: number
  readonly onStage?: (stage: Stage) => void
  /** Its idempotency key: stored with its event, in the same atomic write (idempotency.ts). */
  readonly idempotency?: Keyed
}

export interface Committed {
  readonly event: StoredEvent
  /** The row after the command; null after a delete. */
  readonly row: Row | null
  /** The row serialised once, for the store and for the response alike. */
  readonly rowJson: string | null
  /** The answer was given before: this is its retry, answered from the stored idempotency key. */
  readonly replayed?: true
}

/**
 * An app command (a command across entity types): decided whole in the writer, against the batch so far, and
 * appended whole or not at all; each of its events carries its name and correlation.
 */
export interface CommandSubmission {
  readonly app: CompiledApp
  readonly command: CompiledCommand
  /** Decoded already (`command.decodeParams`). */
  readonly params: Record<string, unknown>
  /** One id for this execution, on each of its events (kept when it is decided again). */
  readonly correlation: string
  readonly onStage?: (stage: Stage) => void
  readonly idempotency?: Keyed
}

/** An app command's events, in the order of its changes, each with its row after it. */
export interface CommandCommitted {
  readonly command: string
  readonly correlation: string
  readonly changes: ReadonlyArray<Committed>
  readonly replayed?: true
}

interface Pending extends Submission {
  readonly kind?: undefined
  readonly resume: (exit: Exit.Exit<Committed, CommandError>) => void
  /** The caller went away before the writer took the command: skip it. */
  cancelled: boolean
  /** Shared log: how many times the log refused it as stale. */
  attempts: number
  /** Shared log: it was refused here as not found or conflicting, and is being decided again on caught-up rows. */
  recheck: boolean
}

interface PendingCommand extends CommandSubmission {
  readonly kind: "command"
  readonly resume: (exit: Exit.Exit<CommandCommitted, CommandError>) => void
  cancelled: boolean
  attempts: number
  recheck: boolean
}

/** What the writer's queue holds: a single-row write or an app command. */
type Queued = Pending | PendingCommand

/** Shared log: how often one command may be refused as stale (other nodes keep writing its entity) before it fails. */
const MAX_ATTEMPTS = 64

export interface GroupCommitShape {
  /** Queues the command and waits until its event is durable (or it is refused). */
  readonly submit: (submission: Submission) => Effect.Effect<Committed, CommandError>
  /** Queues an app command and waits until all of its events are durable (or it is refused, and none written). */
  readonly submitCommand: (submission: CommandSubmission) => Effect.Effect<CommandCommitted, CommandError>
  /**
   * Completes if the writer dies from a bug of ours. Every command then fails fast with StoreUnavailable; the
   * process should exit non-zero so that a supervisor restarts it (`wo run` does).
   */
  readonly died: Effect.Effect<string>
  /** Commands queued, not yet taken into a batch (metrics). */
  readonly queueDepth: () => number
}

/** The operation a command runs, as MethodFailed names it. */
const operationOf = (p: Submission) => (p.intent._tag === "Invoke" ? p.intent.method.name : p.intent._tag.toLowerCase())

export class GroupCommit extends Context.Tag("writeonce/GroupCommit")<GroupCommit, GroupCommitShape>() {}

export const makeGroupCommit = Effect.gen(function* () {
  const log = yield* EventLog
  const rows = yield* Rows
  const feed = yield* ChangeFeed
  // Optional so that a write path composed without views (tests of the writer alone) still runs.
  const views = Option.getOrUndefined(yield* Effect.serviceOption(Views))
  const settings = yield* WoConfig
  // A shared log has a tailer that applies every node's commits; without one the writer applies its own.
  const tailer = Option.getOrUndefined(yield* Effect.serviceOption(Tailer))
  const shared = tailer !== undefined && tailer.following
  // Metrics: each answer counted as it is given (a plain increment; see metrics.ts).
  const metrics = Option.getOrElse(yield* Effect.serviceOption(Metrics), () => metricsOff)
  const maxBatch = settings.groupCommit ? settings.maxBatch : 1
  const maxPending = Math.max(1024, maxBatch * 16)
  const head = yield* log.head
  let lastSeq = head.lastSeq
  const counters = new Map(head.counters)
  // A plain array and one wake-up callback: per command, no queue or deferred allocation and no fiber hop.
  let pending: Array<Queued> = []
  let wake: (() => void) | undefined
  let closing = false
  // The batch being committed: if the writer dies in it, its callers are failed too.
  let inFlight: ReadonlyArray<Queued> = []
  let deathReason: string | undefined
  const death = yield* Deferred.make<string>()

  /**
   * Decides one command against `current`: the event and the row after it, or the error to answer with.
   * User code (a method's apply) runs isolated in `decide` (domain/user-code.ts); decoding and encoding rows
   * is inside the try too: an exception fails this command alone, never the writer.
   */
  type Decided = Change & { readonly rowJson: string | null }
  const decideOne = (
    p: Pending,
    id: string,
    current: Row | undefined,
    seq: number,
    at: number,
    overlay: Overlay
  ): Either.Either<Decided, CommandError> => {
    const failed = (reason: string, trace: string) => {
      const error = new MethodFailed({ type: p.type.name, id, operation: operationOf(p), reason })
      failures.push({ error, stack: trace })
      return Either.left(error)
    }
    try {
      const decision = decide(p.type, id, current, p.intent, p.expectedVersion)
      if (Either.isLeft(decision)) {
        const refused = decision.left
        // A method threw or returned what cannot be stored: the author's bug, answered 500 and logged.
        return refused._tag === "UserCodeFailure" ? failed(refused.reason, refused.trace) : Either.left(refused)
      }
      const dangling = referenceRefusal(p.type, id, operationOf(p), decision.right, rows, overlay)
      if (dangling !== undefined) return Either.left(dangling)
      const event: StoredEvent = {
        seq,
        at,
        type: p.type.name,
        id,
        version: (current?.version ?? 0) + 1,
        schema: p.type.version,
        ...decision.right
      }
      const row = evolve(current, event) ?? null
      return Either.right({ event, row, before: current ?? null, rowJson: row === null ? null : JSON.stringify(row), uri: rowUri(p.type.name, id) })
    } catch (e) {
      return failed(describeThrown(e), traceOf(e))
    }
  }
  /** A view's evolve is user code too: its failure fails the view alone (see views.ts), logged once durable. */
  const logViewFailures = (prepared: PreparedViews | undefined) =>
    prepared === undefined || prepared.failures.length === 0
      ? Effect.void
      : Effect.forEach(prepared.failures, ({ message, stack }) =>
        Effect.logError(`${message}; the view is served as failed until the next start, writes go on${stack === message ? "" : `\n${stack}`}`), { discard: true })
  // Failures of user code in the current batch, logged once the batch is done.
  const failures: Array<{ readonly error: MethodFailed; readonly stack: string }> = []

  /**
   * After a failed write the store may have been reopened, and (rarely: an fsync error after the data reached
   * the disk) the failed batch may have landed after all. Re-read the head before deciding anything new, and
   * fold whatever the log has beyond what the rows hold, so sequence numbers and ids continue from the disk.
   */
  let resync = false
  const resyncWithLog = Effect.gen(function* () {
    const head = yield* log.head
    // On a shared log the tailer applies whatever landed (this node's or another's).
    if (head.lastSeq > lastSeq && !shared) {
      const landed: Array<Decided> = []
      const latest = new Map<string, Row | null>()
      yield* log.readFrom(lastSeq + 1).pipe(
        Stream.runForEach((event) =>
          Effect.sync(() => {
            const key = streamKey(event.type, event.id)
            const current = latest.has(key) ? latest.get(key) ?? undefined : rows.get(event.type, event.id)
            const row = evolve(current, event) ?? null
            latest.set(key, row)
            landed.push({ event, row, before: current ?? null, rowJson: row === null ? null : JSON.stringify(row), uri: rowUri(event.type, event.id) })
          }))
      )
      yield* Effect.logWarning(`the failed write's ${landed.length} events reached the disk after all; applying them`)
      rows.apply(landed)
      // Their view records landed with them: the same fold gives the same values.
      const prepared = views?.prepare(landed)
      feed.publish(landed, prepared?.commit() ?? [])
      yield* logViewFailures(prepared)
    }
    lastSeq = head.lastSeq
    counters.clear()
    for (const [type, n] of head.counters) counters.set(type, n)
    resync = false
  })

  let catchUp = false

  /**
   * A shared log's answer: stale commands are decided again once this node's rows include the log up to the
   * head the append saw; written ones are answered once the tailer has applied them (read-your-writes).
   */
  const settleShared = (
    outcomes: ReadonlyArray<AppendEntry | Stale | Duplicate>,
    head: number,
    changes: ReadonlyArray<Decided>,
    waiters: ReadonlyArray<Queued>,
    spans: ReadonlyArray<number>,
    prepared: PreparedViews | undefined,
    replays: ReadonlyMap<string, StoredKey> | undefined
  ) =>
    Effect.gen(function* () {
      const written: Array<Decided> = []
      const answered: Array<{ readonly p: Queued; readonly from: number; readonly to: number }> = []
      const again: Array<Queued> = []
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
            p.resume(Exit.fail(new StoreUnavailable({ reason: "the log refused a write as a duplicate without its stored answer" })))
          } else answerFromStored(p, stored)
          continue
        }
        if (stale > 0 && stale < spans[w]) {
          // A log that breaks the contract (a command's entries all written or all stale): never answer it as done.
          p.resume(Exit.fail(new StoreUnavailable({ reason: `the log wrote ${spans[w] - stale} of the ${spans[w]} events of one command` })))
          continue
        }
        // An app command's entries are written all or none (the log refuses the whole group): it is decided again.
        if (stale > 0) {
          if (++p.attempts >= MAX_ATTEMPTS) {
            const what = p.kind === "command" ? `the command ${p.command.name}'s rows` : `${p.type.name} ${p.id ?? ""}`
            p.resume(Exit.fail(new StoreUnavailable({ reason: `${what} kept changing on other nodes (${MAX_ATTEMPTS} attempts); retry` })))
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
      lastSeq = Math.max(lastSeq, head)
      if (tailer !== undefined && tailer.following) {
        const caught = yield* Effect.either(tailer.reached(head))
        // The writes are durable whatever happens here: they are acknowledged, without read-your-writes this once.
        if (Either.isLeft(caught)) yield* Effect.logWarning(`acknowledging durable writes this node has not applied yet: ${caught.left.reason}`)
      } else {
        // A shared log without a tailer (a writer composed alone): apply what this node wrote.
        rows.apply(written)
        feed.publish(written, prepared?.commit() ?? [])
        yield* logViewFailures(prepared)
      }
      if (again.length > 0) pending = [...again, ...pending]
      for (const { p, from, to } of answered) answerWith(p, written, from, to)
    })

  /** Answers a waiter with its change (a single-row write) or its changes (an app command), `from` to `to`. */
  const answerWith = (p: Queued, written: ReadonlyArray<Decided>, from: number, to: number) => {
    p.onStage?.("durable")
    if (p.kind === "command") p.resume(Exit.succeed({ command: p.command.name, correlation: p.correlation, changes: written.slice(from, to) }))
    else p.resume(Exit.succeed(written[from]))
  }

  /** Answers a keyed waiter with the answer stored with its key (or IdempotencyKeyReused for another request). */
  const answerFromStored = (p: Queued, stored: StoredKey) => {
    const changes = storedChanges(stored, p.idempotency!.fingerprint)
    if (Either.isLeft(changes)) return p.resume(Exit.fail(changes.left))
    p.onStage?.("durable")
    if (p.kind === "command") p.resume(Exit.succeed(commandFromChanges(changes.right, true)))
    else p.resume(Exit.succeed(changes.right[0]))
  }

  const commitBatch = (batch: ReadonlyArray<Queued>) =>
    Effect.gen(function* () {
      inFlight = batch
      if (resync) {
        const synced = yield* Effect.either(resyncWithLog)
        if (Either.isLeft(synced)) {
          for (const p of batch) p.resume(Exit.fail(synced.left))
          return
        }
      }
      if (catchUp && tailer !== undefined) {
        // Some command was refused against rows that may lag the shared log: bring them to its head first.
        catchUp = false
        const caught = yield* Effect.either(Effect.flatMap(log.head, (h) => tailer.reached(h.lastSeq)))
        if (Either.isLeft(caught)) yield* Effect.logWarning(`cannot catch up with the shared log before deciding again: ${caught.left.reason}`)
      }
      // Keyed submissions whose key is stored already (a retry after a restart or a kill, or of a write another node
      // made) are answered from the store, not decided: one read for the batch's keys.
      const settled = new Set<Queued>()
      const keyed = log.storedKeys === undefined ? [] : batch.filter((p) => !p.cancelled && p.idempotency !== undefined)
      if (keyed.length > 0) {
        const found = yield* Effect.either(log.storedKeys!(keyed.map((p) => p.idempotency!.key)))
        for (const p of keyed) {
          const stored = Either.isRight(found) ? found.right.get(p.idempotency!.key) : undefined
          if (Either.isLeft(found)) p.resume(Exit.fail(found.left))
          else if (stored !== undefined) answerFromStored(p, stored)
          else continue
          settled.add(p)
        }
      }
      const overlay = new Map<string, Row | null>()
      const moved = new Map<string, number>()
      const changes: Array<Decided> = []
      const waiters: Array<Queued> = []
      // How many of `changes` each waiter has: 1 for a single-row write, one per change for an app command.
      const spans: Array<number> = []
      // Shared log: commands to decide in the next batch, and the entities created in this one.
      const again: Array<Queued> = []
      const createdHere = new Set<string>()
      const firstSeq = lastSeq
      const at = Date.now()
      /** The row as the batch left it so far (what a command's `ctx.get` and its changes are decided against). */
      const lookup = (type: string, id: string) => {
        const key = streamKey(type, id)
        return overlay.has(key) ? overlay.get(key) ?? undefined : rows.get(type, id)
      }
      /** Decides an app command whole: all of its changes join the batch, or none of them (the overlay untouched). */
      const decideCommandInBatch = (p: PendingCommand) => {
        const refused = (error: CommandError) => {
          if (shared && !p.recheck && (error._tag === "NotFound" || error._tag === "VersionConflict" || error._tag === "Rejected")) {
            // This node's rows may not have another node's latest write yet: decide once more, caught up.
            p.recheck = true
            catchUp = true
            again.push(p)
          } else p.resume(Exit.fail(error))
        }
        const planned = planCommand(p.app, p.command, p.params, lookup)
        if (Either.isLeft(planned)) {
          const e = planned.left
          if (e._tag !== "UserCodeFailure") return refused(e)
          const error = commandFailed(p.command, e)
          failures.push({ error, stack: e.trace })
          return p.resume(Exit.fail(error))
        }
        const decided: Array<Decided> = []
        const ids = new Map<string, number>()
        // Each change is in the overlay while the next ones are decided (a loan's ref to a book this command
        // creates resolves); a refusal takes them all out again.
        const undo: Array<readonly [string, boolean, Row | null | undefined]> = []
        const rollback = () => {
          for (let i = undo.length - 1; i >= 0; i--) {
            const [key, had, before] = undo[i]
            if (had) overlay.set(key, before ?? null)
            else overlay.delete(key)
          }
        }
        const refusedWhole = (error: CommandError) => {
          rollback()
          return refused(error)
        }
        for (const change of planned.right) {
          const type = change.type.name
          const create = change.intent._tag === "Create"
          const id = create ? String((ids.get(type) ?? moved.get(type) ?? counters.get(type) ?? 0) + 1) : change.id!
          if (create) ids.set(type, Number(id))
          // The log may give this batch's creates other ids: a command on one of them waits for the next batch.
          if (shared && !create && createdHere.has(streamKey(type, id))) {
            rollback()
            return again.push(p)
          }
          // Each change is decided as the single-row write would be, with the same checks.
          const entry: Pending = { type: change.type, id, intent: change.intent, resume: () => undefined, cancelled: false, attempts: 0, recheck: false }
          const one = decideOne(entry, id, create ? undefined : lookup(type, id), lastSeq + 1 + decided.length, at, overlay)
          if (Either.isLeft(one)) return refusedWhole(one.left)
          const key = streamKey(type, id)
          undo.push([key, overlay.has(key), overlay.get(key)])
          overlay.set(key, one.right.row)
          decided.push({ ...one.right, event: { ...one.right.event, command: p.command.name, correlation: p.correlation } })
        }
        if (decided.length === 0) return p.resume(Exit.succeed({ command: p.command.name, correlation: p.correlation, changes: [] }))
        for (const d of decided) {
          lastSeq++
          if (shared && d.event.kind === "created") createdHere.add(streamKey(d.event.type, d.event.id))
          changes.push(d)
        }
        for (const [type, n] of ids) moved.set(type, n)
        waiters.push(p)
        spans.push(decided.length)
        p.onStage?.("decided")
      }
      for (const p of batch) {
        if (p.cancelled || settled.has(p)) continue
        if (p.kind === "command") {
          decideCommandInBatch(p)
          continue
        }
        const type = p.type.name
        let id = p.id ?? ""
        if (p.intent._tag === "Create") id = String((moved.get(type) ?? counters.get(type) ?? 0) + 1)
        const key = streamKey(type, id)
        // The log may give this batch's creates other ids: a command on one of them waits for the next batch.
        if (shared && p.intent._tag !== "Create" && createdHere.has(key)) {
          again.push(p)
          continue
        }
        // A create starts a new entity (on a shared log this node's counter may lag: the log picks the id).
        const current = p.intent._tag === "Create" ? undefined : overlay.has(key) ? overlay.get(key) ?? undefined : rows.get(type, id)
        const decided = decideOne(p, id, current, lastSeq + 1, at, overlay)
        if (Either.isLeft(decided)) {
          const tag = decided.left._tag
          if (shared && !p.recheck && (tag === "NotFound" || tag === "VersionConflict" || tag === "Rejected") && !overlay.has(key)) {
            // This node's rows may not have another node's latest write yet: decide once more, caught up.
            p.recheck = true
            catchUp = true
            again.push(p)
            continue
          }
          p.resume(Exit.fail(decided.left))
          continue
        }
        if (shared && p.intent._tag === "Create") createdHere.add(key)
        lastSeq++
        if (p.intent._tag === "Create") moved.set(type, Number(id))
        overlay.set(key, decided.right.row)
        changes.push(decided.right)
        waiters.push(p)
        spans.push(1)
        p.onStage?.("decided")
      }
      if (failures.length > 0) {
        for (const { error, stack } of failures.splice(0)) {
          // A stack when the user code threw an Error; a value that is not one has only its description.
          yield* Effect.logError(`${error.type}${error.id === "" ? "" : ` ${error.id}`}: ${error.message} (nothing was written for it)${stack === error.reason ? "" : `\n${stack}`}`)
        }
      }
      if (again.length > 0) pending = [...again, ...pending]
      if (changes.length === 0) return
      // The views' next values are stored in the same atomic write; they become visible only once it is durable.
      // On a shared log each node's tailer folds them instead (a node's views may lag the log).
      const prepared = shared ? undefined : views?.prepare(changes)
      const viewRecords = prepared?.records ?? []
      // Each keyed submission's key is stored with its entries, in the same atomic write.
      const keys: Array<KeyClaim> = []
      for (let w = 0, i = 0; w < waiters.length; i += spans[w], w++) {
        const keyed = waiters[w].idempotency
        if (keyed !== undefined) keys.push({ key: keyed.key, fingerprint: keyed.fingerprint, at, first: i, count: spans[w] })
      }
      const written = yield* Effect.either(log.append({
        entries: changes,
        counters: moved,
        ...(viewRecords.length > 0 ? { views: viewRecords } : {}),
        ...(keys.length > 0 ? { keys } : {})
      }))
      if (Either.isLeft(written)) {
        // No ack without durability: the whole batch fails. The next batch first re-reads the head.
        lastSeq = firstSeq
        resync = true
        prepared?.discard()
        yield* Effect.logError(`durable write failed for ${changes.length} events: ${written.left.reason}`)
        for (const p of waiters) p.resume(Exit.fail(written.left))
        return
      }
      const result = written.right
      if (result === undefined) {
        // A single-writer log wrote the batch exactly as decided.
        for (const [type, n] of moved) counters.set(type, n)
        rows.apply(changes)
        feed.publish(changes, prepared?.commit() ?? [])
        yield* logViewFailures(prepared)
        for (let w = 0, i = 0; w < waiters.length; i += spans[w], w++) answerWith(waiters[w], changes, i, i + spans[w])
        return
      }
      yield* settleShared(result.outcomes, result.lastSeq, changes, waiters, spans, prepared, result.replays)
    }).pipe(
      // Cleared only when the batch ends normally: if the writer dies in it, onDeath still sees its callers.
      Effect.tap(() => {
        inFlight = []
      }),
      Effect.uninterruptible
    )

  const takeBatch = () => {
    const batch = pending.length <= maxBatch ? pending : pending.slice(0, maxBatch)
    pending = pending.length <= maxBatch ? [] : pending.slice(maxBatch)
    return batch
  }
  const nextBatch = Effect.async<ReadonlyArray<Queued>>((resume) => {
    if (pending.length > 0) return resume(Effect.sync(takeBatch))
    log.settle?.() // idle: the log records its last acknowledged seq, off the hot path
    wake = () => {
      wake = undefined
      resume(Effect.sync(takeBatch))
    }
    return Effect.sync(() => {
      wake = undefined
    })
  })

  // The writer must never die; if a bug of ours kills it anyway, no caller may hang: fail everyone, say why.
  // Callers are failed before anything is logged: even a cause the logger cannot print leaves nobody waiting.
  const onDeath = (cause: Cause.Cause<unknown>) =>
    Effect.gen(function* () {
      const reason = describeThrown(Cause.squash(cause))
      deathReason = reason
      const stranded = [...inFlight, ...pending]
      pending = []
      const error = new StoreUnavailable({ reason: `the writer stopped after an internal error (${reason}); restart the server` })
      for (const p of stranded) p.resume(Exit.fail(error))
      yield* Deferred.succeed(death, reason)
      yield* Effect.logError(`the group-commit writer died (${reason}): every command now fails with 503; restart the server`, cause).pipe(
        Effect.catchAllDefect(() => Effect.logError(`the group-commit writer died (${reason}): every command now fails with 503; restart the server`))
      )
    })

  const writer = yield* Effect.forkDaemon(
    Effect.forever(Effect.flatMap(nextBatch, commitBatch)).pipe(
      Effect.catchAllCause((cause) => (Cause.isInterruptedOnly(cause) ? Effect.void : onDeath(cause)))
    )
  )

  // Shutdown: refuse new commands, let the batch in flight finish, flush what is queued, then stop.
  yield* Effect.addFinalizer(() =>
    Effect.gen(function* () {
      closing = true
      yield* Fiber.interrupt(writer)
      while (pending.length > 0) yield* commitBatch(takeBatch())
    }))

  /**
   * Queues a write (a single-row one or an app command) unless the writer cannot take it, and answers its caller
   * through `resume`, counted by the metrics. An interrupted caller (client gone) is skipped if the writer has not
   * taken its command yet.
   */
  const enqueue = <A>(
    submission: Omit<Pending, "resume" | "cancelled" | "attempts" | "recheck"> | Omit<PendingCommand, "resume" | "cancelled" | "attempts" | "recheck">,
    resume: (effect: Effect.Effect<A, CommandError>) => void
  ) => {
    if (closing) return resume(Effect.fail(new StoreUnavailable({ reason: "the server is shutting down" })))
    if (deathReason !== undefined) {
      return resume(Effect.fail(new StoreUnavailable({ reason: `the writer stopped after an internal error (${deathReason}); restart the server` })))
    }
    if (pending.length >= maxPending) return resume(Effect.fail(new StoreUnavailable({ reason: "too many commands queued; retry" })))
    const p = {
      ...submission,
      resume: (exit: Exit.Exit<A, CommandError>) => {
        metrics.answered(exit)
        resume(exit)
      },
      cancelled: false,
      attempts: 0,
      recheck: false
    } as Queued
    submission.onStage?.("accepted")
    pending.push(p)
    wake?.()
    return Effect.sync(() => {
      p.cancelled = true
    })
  }

  return GroupCommit.of({
    submit: (submission) => Effect.async<Committed, CommandError>((resume) => enqueue({ ...submission }, resume)),
    submitCommand: (submission) =>
      Effect.async<CommandCommitted, CommandError>((resume) => enqueue({ ...submission, kind: "command" as const }, resume)),
    died: Deferred.await(death),
    queueDepth: () => pending.length
  })
})

export const GroupCommitLive = Layer.scoped(GroupCommit, makeGroupCommit)
