/**
 * The group-commit fiber: the single writer. It drains the queue of pending commands, decides each against
 * the current rows (plus earlier decisions in the same batch), writes the whole batch with one durable write,
 * applies the projection, publishes the changes, and only then completes every waiter.
 *
 * Deciding inside the writer is what serialises concurrent commands on one entity without locks or retries:
 * 100 concurrent `set_price` calls on one product become versions 2..101, usually in one fsync.
 *
 * The writer is three parts: this queue (one array and one wake-up callback: no allocation or fiber hop per
 * command), the pure decision of a batch (decide-batch.ts), and the commit mode (commit-mode.ts), which makes a
 * written batch visible and says who is answered with what. On a single-writer log (Local) the writer applies its
 * own batches; on a shared log (Shared) the log assigns seqs, creates take ids from this node's blocks (id-blocks.ts),
 * the log refuses what was decided against a row another node moved on, and the tailer applies the other nodes' commits. A caller is answered once this node's rows
 * include its write (read-your-writes).
 *
 * An app command (a command across entity types) is one submission: the writer runs its `decide` against the
 * batch so far (command-decider.ts), decides each of its changes as the single-row write would (`decideOne`), and
 * adds all of its events to the batch or none (a refusal leaves the batch untouched). One batch is one atomic
 * write, so they land together; a shared log refuses the command's entries as one group, and the writer then
 * decides the whole command again once caught up.
 */
import { Cause, Context, Deferred, Effect, Either, Exit, Fiber, Layer, Option } from "effect"
import { Overloaded, ShuttingDown, storeErrorPolicy, TimedOut, withReason, WriterStopped, type CommandError, type StoreError } from "../domain/errors.ts"
import { describeThrown } from "../domain/decide/user-code.ts"
import { WoConfig } from "../support/config.ts"
import { Rows } from "../projections/rows/rows.ts"
import { EventLog, type KeyClaim, type StoredKey } from "../log/event-log.ts"
import { commandFromChanges, storedChanges } from "./idempotency.ts"
import { Metrics, metricsOff } from "../metrics/metrics.ts"
import { CommitMode } from "./commit-mode.ts"
import { decideAhead } from "./batch-prefetch.ts"
import { decideBatch, type DecidedBatch } from "./decide-batch.ts"
import { batchReferences } from "./reference-check.ts"
import type { CommandCommitted, CommandSubmission, Committed, Decided, Pending, PendingCommand, Queued, Submission } from "./submission.ts"
import { WriterStatus, type WriterStatusShape } from "./writer-status.ts"
import { noCancel } from "../support/no-cancel.ts"
import { makeRequestDeadlines } from "./request-deadline.ts"
import { makeIdBlocks } from "./id-blocks.ts"

export interface GroupCommitShape extends WriterStatusShape {
  /** Queues the command and waits until its event is durable (or it is refused). */
  readonly submit: (submission: Submission) => Effect.Effect<Committed, CommandError>
  /**
   * `submit` without a fiber: queues the command and calls `onExit` once with its answer (possibly before returning,
   * when the writer cannot take it). The caller's own fiber is not needed to wait, which is what a request on the
   * direct REST path saves (http/rest/rest.ts `direct`, http/edge/edge.ts DirectRoute). `onExit` runs inside the
   * writer's batch: it must not throw or block. Returns what cancels the command if the writer has not taken it yet.
   */
  readonly offer: (submission: Submission, onExit: (exit: Exit.Exit<Committed, CommandError>) => void) => () => void
  /** Queues an app command and waits until all of its events are durable (or it is refused, and none written). */
  readonly submitCommand: (submission: CommandSubmission) => Effect.Effect<CommandCommitted, CommandError>
  /** `submitCommand` without a fiber, as `offer` is `submit` without one (same rules for `onExit`). */
  readonly offerCommand: (submission: CommandSubmission, onExit: (exit: Exit.Exit<CommandCommitted, CommandError>) => void) => () => void
}

/** What a write is told when it is answered 503 after its commit may have been sent (docs/operating.md, "Retries"). */
const MAY_HAVE_LANDED = "the write may or may not have landed: retry it with the same idempotency key"

/** A keyed submission whose answer, as decided, waits until its key is read (a shared log): `asDecided` gives it. */
type Held = readonly [Queued, asDecided: () => void]

export class GroupCommit extends Context.Tag("writeonce/GroupCommit")<GroupCommit, GroupCommitShape>() {}

export const makeGroupCommit = Effect.gen(function* () {
  const log = yield* EventLog
  const rows = yield* Rows
  const mode = yield* CommitMode
  const shared = mode._tag === "Shared"
  // A shared log reads the batch's idempotency keys in its append call (keys claimed for no entry: probes).
  const probeKeys = shared && log.storedKeys !== undefined
  const settings = yield* WoConfig
  // Metrics: each answer counted as it is given (a plain increment; see metrics.ts).
  const metrics = Option.getOrElse(yield* Effect.serviceOption(Metrics), () => metricsOff)
  const maxBatch = settings.groupCommit ? settings.maxBatch : 1
  const maxPending = Math.max(1024, maxBatch * 16)
  const head = yield* log.head
  let lastSeq = head.lastSeq
  const counters = new Map(head.counters)
  // A shared log that hands out blocks of ids: this node's creates take ids from its own blocks, never another node's.
  const blocks = shared && log.reserveIds !== undefined ? makeIdBlocks(settings.idBlock, log.reserveIds) : undefined
  // A plain array and one wake-up callback: per command, no queue or deferred allocation and no fiber hop.
  let pending: Array<Queued> = []
  let wake: (() => void) | undefined
  let closing = false
  // The batch being committed: if the writer dies in it, its callers are failed too.
  let inFlight: ReadonlyArray<Queued> = []
  // Whether the batch in flight is decided: until then a submission cancelled in it is skipped, never written.
  let inFlightDecided = false
  // The last batch's size, and the queue's length as its callers were answered (-1 once a batch is taken, none
  // answered since): what the next batch lingers for on a shared log (nextBatch).
  let lastBatch = 0
  let queuedAtAnswers = -1
  // How many times the tailer had applied other nodes' commits when the last batch was taken.
  let followedAtTake = 0
  const followed = mode._tag === "Shared" ? mode.tailer.followed : () => 0
  /** Set once the writer died: what every later command fails with. */
  let stopped: WriterStopped | undefined
  const death = yield* Deferred.make<string>()

  /**
   * After a failed write the store may have been reopened, and (rarely: an fsync error after the data reached
   * the disk) the failed batch may have landed after all. Re-read the head before deciding anything new, and
   * apply whatever the log has beyond what the rows hold, so sequence numbers and ids continue from the disk.
   */
  let resync = false
  const resyncWithLog = Effect.gen(function* () {
    const head = yield* log.head
    if (head.lastSeq > lastSeq) yield* mode.resync(lastSeq)
    lastSeq = head.lastSeq
    counters.clear()
    for (const [type, n] of head.counters) counters.set(type, n)
    resync = false
  })

  /**
   * Shared log without blocks of ids (a log that hands none out): the counters follow the creates this node applied,
   * the other nodes' too. An app command's create
   * decided with an id the log gave already is refused whole (the log cannot renumber it within its group): decided
   * again with the same counter, it would be refused again, forever.
   */
  const followCreates = (lastIds: ReadonlyMap<string, number>) => {
    for (const [type, n] of lastIds) if (n > (counters.get(type) ?? 0)) counters.set(type, n)
  }

  // Some command was refused against rows that may lag the shared log: catch up before deciding it again.
  let catchUp = false

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

  /**
   * Answers the held submissions (keyed, refused or unchanged on a shared log): from the stored key if the read
   * found it, else as decided; if the read failed, with its error (a retry with the key settles it).
   */
  const answerHeld = (held: ReadonlyArray<Held>, found: Either.Either<ReadonlyMap<string, StoredKey>, StoreError>) =>
    Effect.sync(() => {
      for (const [p, asDecided] of held) {
        const stored = Either.isRight(found) ? found.right.get(p.idempotency!.key) : undefined
        if (Either.isLeft(found)) p.resume(Exit.fail(found.left))
        else if (stored !== undefined) answerFromStored(p, stored)
        else asDecided()
      }
    })

  /**
   * One batch: decided, written, answered. A generator function made once (`fnUntraced`), not one per batch
   * (`Effect.gen(function* () {...})` inside `commitBatch`): in V8 a generator function made per call kept what it
   * closed over (the batch, its callers) alive through young-generation collections, into the old generation
   * (bench/gc-survival.ts; a generator function made once does not).
   */
  const decideWriteAnswer = Effect.fnUntraced(function* (batch: ReadonlyArray<Queued>) {
    inFlight = batch
    inFlightDecided = false
    if (resync) {
      const synced = yield* Effect.either(resyncWithLog)
      if (Either.isLeft(synced)) {
        for (const p of batch) p.resume(Exit.fail(synced.left))
        return
      }
    }
    if (catchUp) {
      catchUp = false
      yield* mode.catchUp
    }
    // Keyed submissions whose key is stored already (a retry after a restart or a kill, or of a write another node
    // made) are answered from the store, not decided: one read for the batch's keys. Not on a shared log: there the
    // append call itself reads the keys it claims (one round trip per batch, not two), and the keys of submissions
    // this batch refuses or leaves unchanged go with it as probes (`held`, below).
    let settled: Set<Queued> | undefined
    const keyed = probeKeys || log.storedKeys === undefined ? [] : batch.filter((p) => !p.cancelled && p.idempotency !== undefined)
    if (keyed.length > 0) {
      settled = new Set()
      const found = yield* Effect.either(log.storedKeys!(keyed.map((p) => p.idempotency!.key)))
      for (const p of keyed) {
        const stored = Either.isRight(found) ? found.right.get(p.idempotency!.key) : undefined
        if (Either.isLeft(found)) p.resume(Exit.fail(found.left))
        else if (stored !== undefined) answerFromStored(p, stored)
        else continue
        settled.add(p)
      }
    }
    const ready = yield* Effect.either(rows.decisionsReady)
    if (Either.isLeft(ready)) {
      for (const p of batch) if (!settled?.has(p)) p.resume(Exit.fail(ready.left))
      return
    }
    if (blocks !== undefined) {
      // The types this batch creates in get ids before it is decided (an app command's: when one misses them).
      const wanted = new Set<string>()
      for (const p of batch) if (p.kind !== "command" && p.intent._tag === "Create" && !p.cancelled) wanted.add(p.type.name)
      const refilled = yield* Effect.either(blocks.refill(wanted))
      if (Either.isLeft(refilled)) {
        for (const p of batch) if (!settled?.has(p)) p.resume(Exit.fail(refilled.left))
        return
      }
    } else if (mode._tag === "Shared") followCreates(mode.tailer.lastIds)
    const firstSeq = lastSeq
    const at = Date.now()
    // Shared log: the seq the rows stand at as the batch is decided, for the log's reference check at commit (no
    // yield between the two; rows read from the store first, batch-prefetch.ts, are newer still: the check reads
    // every commit past this seq).
    const decidedAt = mode._tag === "Shared" ? mode.tailer.applied() : 0
    const start = { lastSeq, counters, at, shared, ...(blocks === undefined ? {} : { nextId: blocks.next }) }
    let decided: DecidedBatch
    if (rows.cached === undefined) decided = decideBatch(batch, rows, start, settled)
    else {
      // Decided again as the rows it reads arrive: `next` only looks, so the ids are given once, below.
      const ahead = yield* Effect.either(decideAhead(batch, rows, start, settled))
      if (Either.isLeft(ahead)) {
        for (const p of batch) if (!settled?.has(p)) p.resume(Exit.fail(ahead.left))
        return
      }
      decided = ahead.right
    }
    // The ids decided are given, whatever becomes of the batch: a create decided again takes another.
    if (blocks !== undefined) for (const [type, id] of decided.moved) blocks.gave(type, id)
    inFlightDecided = true
    const { changes, waiters, spans } = decided
    // Shared log: a keyed submission refused or left unchanged here may be the retry of a write that landed (on
    // another node, or an attempt whose answer was lost): its answer waits for its key, read with the append.
    let held: Array<Held> | undefined
    for (const [p, error] of decided.refused) {
      const asDecided = () => p.resume(Exit.fail(error))
      if (probeKeys && p.idempotency !== undefined) (held ??= []).push([p, asDecided])
      else asDecided()
    }
    for (const p of decided.unchanged) {
      const asDecided = () => p.resume(Exit.succeed({ command: p.command.name, correlation: p.correlation, changes: [] }))
      if (probeKeys && p.idempotency !== undefined) (held ??= []).push([p, asDecided])
      else asDecided()
    }
    for (const p of waiters) p.onStage?.("decided")
    for (const p of decided.rechecks) p.recheck = true
    if (decided.rechecks.length > 0) catchUp = true
    for (const { error, stack } of decided.failures) {
      // A stack when the user code threw an Error; a value that is not one has only its description.
      yield* Effect.logError(`${error.type}${error.id === "" ? "" : ` ${error.id}`}: ${error.message} (nothing was written for it)${stack === error.reason ? "" : `\n${stack}`}`)
    }
    if (decided.again.length > 0) pending = [...decided.again, ...pending]
    if (changes.length === 0) {
      // Nothing to write: the held keys are the batch's one read.
      if (held !== undefined) yield* answerHeld(held, yield* Effect.either(log.storedKeys!(held.map(([p]) => p.idempotency!.key))))
      return
    }
    lastSeq += changes.length
    // The views' next values are stored in the same atomic write; they become visible only once it is durable.
    const prepared = mode.prepare(decided)
    const viewRecords = prepared?.records ?? []
    // Each keyed submission's key is stored with its entries, in the same atomic write.
    const keys: Array<KeyClaim> = []
    for (let w = 0, i = 0; w < waiters.length; i += spans[w], w++) {
      const keyed = waiters[w].idempotency
      if (keyed !== undefined) keys.push({ key: keyed.key, fingerprint: keyed.fingerprint, at, first: i, count: spans[w] })
    }
    const references = shared ? batchReferences(waiters, spans, changes, decidedAt) : undefined
    // A probe: a key claimed for no entry is read, not written (the log answers it in `replays` if it is stored).
    if (held !== undefined) for (const [p] of held) keys.push({ key: p.idempotency!.key, fingerprint: p.idempotency!.fingerprint, at, first: 0, count: 0 })
    const written = yield* Effect.either(log.append({
      entries: changes,
      counters: decided.moved,
      ...(viewRecords.length > 0 ? { views: viewRecords } : {}),
      ...(prepared?.entries !== undefined && prepared.entries.length > 0 ? { viewEntries: prepared.entries } : {}),
      ...(keys.length > 0 ? { keys } : {}),
      ...(references !== undefined ? { references } : {})
    }))
    if (Either.isLeft(written)) {
      // No ack without durability: the whole batch fails. The next batch first re-reads the head.
      lastSeq = firstSeq
      resync = true
      prepared?.discard()
      yield* Effect.logWithLevel(storeErrorPolicy(written.left).log, `durable write failed for ${changes.length} events: ${written.left.reason}`)
      // The commit may have been sent before the failure: its callers are told how to settle it.
      const failed = withReason(written.left, `${written.left.reason}; ${MAY_HAVE_LANDED}`)
      for (const p of waiters) p.resume(Exit.fail(failed))
      if (held !== undefined) yield* answerHeld(held, Either.left(written.left))
      return
    }
    // Those queued before this batch's callers are answered: the next batch lingers for them and for the callers.
    queuedAtAnswers = pending.length
    if (held !== undefined) yield* answerHeld(held, Either.right(written.right?.replays ?? new Map()))
    const done = yield* mode.settle(decided, written.right, prepared)
    for (const [type, n] of done.counters) counters.set(type, Math.max(counters.get(type) ?? 0, n))
    lastSeq = Math.max(lastSeq, done.head)
    for (const [p, error] of done.failed) p.resume(Exit.fail(error))
    for (const [p, stored] of done.replayed) answerFromStored(p, stored)
    if (done.again.length > 0) pending = [...done.again, ...pending]
    for (const { p, from, to } of done.answered) answerWith(p, done.written, from, to)
  })

  const commitBatch = (batch: ReadonlyArray<Queued>) =>
    decideWriteAnswer(batch).pipe(
      // Cleared only when the batch ends normally: if the writer dies in it, onDeath still sees its callers.
      Effect.tap(() => {
        inFlight = []
      }),
      // A batch once begun is seen through: shutdown's interrupt waits for it. So no Effect timeout inside it can
      // fire either (a timeout interrupts, and waits for the interrupted effect to end): every wait in here is bounded
      // by the store itself or by a timer that answers it (the tailer's `reached`, the PostgreSQL append's deadline).
      Effect.uninterruptible
    )

  /**
   * On a shared log the writer lingers before closing a batch, up to `batchLingerMs`, for the callers its last batch
   * answered: a client that writes again once answered then joins this batch instead of the next. Under load the
   * callers otherwise split into two halves that take turns (one half waits while the other's batch commits), and
   * every batch pays its round trip and every other node's work to follow it for half the writes it could carry. It
   * closes early once as many are queued as were queued when the last batch's callers were answered, plus those
   * callers; a lone caller (one answered, none queued) never waits, nor does a batch after one that wrote nothing.
   * Only while other nodes write (the tailer applied a commit of theirs since the last batch was taken): a node
   * alone has no one following its batches, and there the halves taking turns overlap its own work (parsing and
   * answering one half) with the other half's commit, which a linger gives up. Measured side by side, 32 in flight:
   * three nodes' CPU per write a fifth lower and their writes a quarter to a third more; one node lingering lost
   * writes/s in two pairs of runs of three. A plain timer, not an Effect sleep: no fiber or clock service per batch
   * on the writer's path.
   */
  const lingerMs = shared ? settings.batchLingerMs : 0
  const takeBatch = () => {
    const batch = pending.length <= maxBatch ? pending : pending.slice(0, maxBatch)
    pending = pending.length <= maxBatch ? [] : pending.slice(maxBatch)
    lastBatch = batch.length
    queuedAtAnswers = -1
    followedAtTake = followed()
    return batch
  }
  const nextBatch = Effect.async<ReadonlyArray<Queued>>((resume) => {
    const expected = queuedAtAnswers < 0 || followed() === followedAtTake ? 0 : Math.min(maxBatch, queuedAtAnswers + lastBatch)
    let lingering: ReturnType<typeof setTimeout> | undefined
    const close = () => {
      wake = undefined
      if (lingering !== undefined) clearTimeout(lingering)
      lingering = undefined
      resume(Effect.sync(takeBatch))
    }
    /** Starts the linger if the batch is short of what is expected; false: close it now. */
    const lingers = () => {
      if (lingerMs <= 0 || pending.length >= expected) return false
      wake = () => {
        if (pending.length >= expected) close()
      }
      lingering = setTimeout(close, lingerMs)
      return true
    }
    if (pending.length === 0) {
      log.settle?.() // idle: the log records its last acknowledged seq, off the hot path
      wake = () => {
        wake = undefined
        if (!lingers()) resume(Effect.sync(takeBatch))
      }
    } else if (!lingers()) return resume(Effect.sync(takeBatch))
    return Effect.sync(() => {
      wake = undefined
      if (lingering !== undefined) clearTimeout(lingering)
    })
  })

  // The writer must never die; if a bug of ours kills it anyway, no caller may hang: fail everyone, say why.
  // Callers are failed before anything is logged: even a cause the logger cannot print leaves nobody waiting.
  const onDeath = (cause: Cause.Cause<unknown>) =>
    Effect.gen(function* () {
      const reason = describeThrown(Cause.squash(cause))
      const error = new WriterStopped({ reason: `the writer stopped after an internal error (${reason}); restart the server` })
      stopped = error
      const stranded = [...inFlight, ...pending]
      pending = []
      for (const p of stranded) p.resume(Exit.fail(error))
      yield* Deferred.succeed(death, reason)
      const said = `the group-commit writer died (${reason}): every command now fails with 503; restart the server`
      // Logged with its cause, or without it if the cause cannot be printed.
      yield* Effect.logError(said, cause).pipe(Effect.catchAllDefect(() => Effect.logError(said)))
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
      deadlines?.close()
      yield* Fiber.interrupt(writer)
      while (pending.length > 0) yield* commitBatch(takeBatch())
      // No more ids are given: the unused end of this node's blocks goes back to the store (id-blocks.ts). Not
      // after the writer died: what it gave in its last batch is not known for sure.
      if (blocks !== undefined && log.releaseIds !== undefined && stopped === undefined) {
        yield* blocks.giveBack(log.releaseIds).pipe(
          Effect.tap((types) => (types.length === 0 ? Effect.void : Effect.logDebug(`ids: the unused end of this node's blocks given back (${types.join(", ")})`))),
          Effect.catchAll((e) => Effect.logWarning(`ids: cannot give back this node's unused ids (${e.reason}); they stay unused`))
        )
      }
    }))

  /**
   * A shared log: every write is answered within WO_STORE_TIMEOUT of its arrival, whatever batches are ahead of it
   * (each store call is bounded, but a write may wait for several). One the writer has not decided yet is skipped: it
   * is not written. One decided in the batch under way may still land: its key settles it.
   */
  const deadlines = shared ? makeRequestDeadlines<Queued>(settings.storeTimeoutMs, (p) => {
    const gone = p.cancelled
    p.cancelled = true
    if (gone) {
      p.answered = true // its caller went away: nobody to answer
      return
    }
    const bound = `no answer within WO_STORE_TIMEOUT (${settings.storeTimeoutMs} ms) of its arrival`
    const mayHaveLanded = inFlightDecided && inFlight.includes(p)
    p.resume(Exit.fail(new TimedOut({
      reason: mayHaveLanded
        ? `${bound}; ${MAY_HAVE_LANDED}`
        : `${bound}; the writer had not reached it (the batches ahead of it wait on the store): it was not written, retry it`
    })))
  }) : undefined

  /**
   * Queues a write (a single-row one or an app command) unless the writer cannot take it, and answers its caller
   * through `onExit`, counted by the metrics. Returns the cancel for a caller that goes away (client gone): its
   * command is skipped if the writer has not taken it yet.
   */
  const enqueue = <A>(
    submission: Submission | CommandSubmission,
    onExit: (exit: Exit.Exit<A, CommandError>) => void
  ): (() => void) => {
    const refusal = closing
      ? new ShuttingDown({ reason: "the server is shutting down" })
      : stopped ?? (pending.length >= maxPending ? new Overloaded({ reason: "too many commands queued; retry" }) : undefined)
    if (refusal !== undefined) {
      onExit(Exit.fail(refusal))
      return noCancel
    }
    const arrivedAt = deadlines === undefined ? 0 : Date.now()
    // Answered once: by the writer, or by its deadline (whichever comes first; the other is dropped).
    const resume = (exit: Exit.Exit<A, CommandError>) => {
      if (p.answered) return
      p.answered = true
      metrics.answered(exit)
      onExit(exit)
    }
    // Its fields listed, one object shape per kind (a spread cost more: bench:profile).
    const p = ("command" in submission
      ? {
        kind: "command",
        app: submission.app,
        command: submission.command,
        params: submission.params,
        correlation: submission.correlation,
        onStage: submission.onStage,
        idempotency: submission.idempotency,
        actor: submission.actor,
        resume,
        cancelled: false,
        attempts: 0,
        recheck: false,
        arrivedAt,
        answered: false
      }
      : {
        kind: undefined,
        type: submission.type,
        id: submission.id,
        intent: submission.intent,
        expectedVersion: submission.expectedVersion,
        onStage: submission.onStage,
        idempotency: submission.idempotency,
        actor: submission.actor,
        resume,
        cancelled: false,
        attempts: 0,
        recheck: false,
        arrivedAt,
        answered: false
      }) as Queued
    submission.onStage?.("accepted")
    pending.push(p)
    deadlines?.watch(p)
    wake?.()
    return () => {
      p.cancelled = true
    }
  }

  /** A fiber waiting for `enqueue`'s answer (interrupting it cancels the command). */
  const awaitAnswer = <A>(submission: Parameters<typeof enqueue<A>>[0]) =>
    Effect.async<A, CommandError>((resume) => {
      const cancel = enqueue(submission, resume)
      return Effect.sync(cancel)
    })

  return GroupCommit.of({
    submit: (submission) => awaitAnswer<Committed>(submission),
    offer: (submission, onExit) => enqueue(submission, onExit),
    submitCommand: (submission) => awaitAnswer<CommandCommitted>(submission),
    offerCommand: (submission, onExit) => enqueue(submission, onExit),
    died: Deferred.await(death),
    queueDepth: () => pending.length
  })
})

/** The writer, and its status for those who only watch it (writer-status.ts). */
export const GroupCommitLive = Layer.scopedContext(
  Effect.map(makeGroupCommit, (writer) => Context.make(GroupCommit, writer).pipe(Context.add(WriterStatus, writer)))
)
