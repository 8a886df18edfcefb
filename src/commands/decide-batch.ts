/**
 * The writer's decision for one batch, as a pure function of the batch, the rows and the log's head as this
 * writer knows it: every command is decided against the rows plus the earlier decisions in the same batch (an
 * overlay), and comes out as changes to write, a refusal to answer, or (on a shared log) a command to decide again.
 * It answers nobody and writes nothing: the queue (group-commit.ts) does that with what it returns.
 *
 * User code (a method's apply, an app command's decide) runs isolated in `decide`/`planCommand`; decoding and
 * encoding rows is inside the try too: an exception fails its command alone, never the batch.
 */
import { Either } from "effect"
import type { Row } from "../domain/catalog.ts"
import { commandFailed, planCommand, type PlannedChange } from "../domain/decide/command-decider.ts"
import { decide, decideIsolated, evolve, type EventDraft } from "../domain/decide/decider.ts"
import type { CommandError, MethodFailed } from "../domain/errors.ts"
import { isCanonicalId } from "../domain/ids.ts"
import { streamKey, type StoredEvent } from "../domain/events.ts"
import { rowUri } from "../domain/uri.ts"
import type { UserCodeFailure } from "../domain/decide/user-code.ts"
import type { RowsShape } from "../projections/rows/rows.ts"
import { paramsMissingRefusal, referenceRefusal, type Overlay } from "./reference-check.ts"
import type { Decided, Pending, PendingCommand, Queued } from "./submission.ts"
import type { Actor } from "../domain/actor.ts"

/** Where the batch starts: the last seq decided, and the highest id of each type. */
export interface BatchStart {
  readonly lastSeq: number
  readonly counters: ReadonlyMap<string, number>
  /** When the batch is decided (ms since the epoch): each event's `at`. */
  readonly at: number
  /**
   * A shared log (several nodes): the rows may lag the log, so the log assigns seqs and create ids, a refusal
   * against a row this batch did not touch is decided again once caught up, and a command on an entity this batch
   * creates waits for the next batch.
   */
  readonly shared: boolean
  /**
   * A shared log with blocks of ids (id-blocks.ts): the id of a create of `type` after `after` (the batch's last
   * one; undefined: its first), or undefined when this node has none left (the submission is decided again in the
   * next batch). Absent: the next id past the counter.
   */
  readonly nextId?: (type: string, after: number | undefined) => number | undefined
}

export interface DecidedBatch {
  /** The changes to write, in order; consecutive seqs from `lastSeq + 1`. */
  readonly changes: ReadonlyArray<Decided>
  /** The submissions that have changes, in order; `spans[i]` of `changes` are `waiters[i]`'s. */
  readonly waiters: ReadonlyArray<Queued>
  readonly spans: ReadonlyArray<number>
  /** The highest id per type, for types this batch created in. */
  readonly moved: ReadonlyMap<string, number>
  /** Submissions refused, with the error to answer. */
  readonly refused: ReadonlyArray<readonly [Queued, CommandError]>
  /** App commands that changed nothing: answered as done, with no change. */
  readonly unchanged: ReadonlyArray<PendingCommand>
  /** Shared log: submissions to decide again, first in the next batch. */
  readonly again: ReadonlyArray<Queued>
  /** Shared log: of `again`, those refused against rows that may lag; the rows must catch up before they are decided again. */
  readonly rechecks: ReadonlyArray<Queued>
  /** User code that failed, to log (its command is among `refused`). */
  readonly failures: ReadonlyArray<{ readonly error: MethodFailed; readonly stack: string }>
}

/** The operation a command runs, as MethodFailed names it. */
const operationOf = (p: Pending | PlannedChange) => (p.intent._tag === "Invoke" ? p.intent.method.name : OPERATIONS[p.intent._tag])
const OPERATIONS = { Create: "create", Update: "update", Delete: "delete" } as const

/**
 * The event of a decided draft, its fields listed in the order the log stores them (seq, at, type, id, version,
 * schema, then the draft's, then the app command's, then the actor). Hand-tuned: spreading the draft into the event
 * cost more per event (bench/decide-ab.ts).
 */
const eventOf = (seq: number, at: number, type: string, id: string, version: number, schema: number, d: EventDraft, of: PendingCommand | undefined, actor: Actor): StoredEvent =>
  d.method === undefined
    ? of === undefined
      ? { seq, at, type, id, version, schema, kind: d.kind, data: d.data, actor }
      : { seq, at, type, id, version, schema, kind: d.kind, data: d.data, command: of.command.name, correlation: of.correlation, actor }
    : of === undefined
    ? { seq, at, type, id, version, schema, kind: d.kind, method: d.method, params: d.params, data: d.data, actor }
    : { seq, at, type, id, version, schema, kind: d.kind, method: d.method, params: d.params, data: d.data, command: of.command.name, correlation: of.correlation, actor }

/** Refusals that may come from rows lagging a shared log: decided once more, caught up. */
const mayLag = (tag: CommandError["_tag"]) => tag === "NotFound" || tag === "VersionConflict" || tag === "Rejected"

/**
 * Decides `batch` (skipping cancelled submissions and those in `skip`) against `rows` from `start`.
 * Reads `rows`, never changes them, and calls nobody back.
 */
export const decideBatch = (
  batch: ReadonlyArray<Queued>,
  rows: RowsShape,
  start: BatchStart,
  skip?: ReadonlySet<Queued>
): DecidedBatch => {
  const { counters, at, shared } = start
  const nextId = start.nextId ?? ((type: string, after: number | undefined) => (after ?? counters.get(type) ?? 0) + 1)
  let lastSeq = start.lastSeq
  const overlay = new Map<string, Row | null>()
  const moved = new Map<string, number>()
  const changes: Array<Decided> = []
  const waiters: Array<Queued> = []
  const spans: Array<number> = []
  const refused: Array<readonly [Queued, CommandError]> = []
  const unchanged: Array<PendingCommand> = []
  const again: Array<Queued> = []
  const rechecks: Array<Queued> = []
  const failures: Array<{ readonly error: MethodFailed; readonly stack: string }> = []
  // Shared log: the entities created in this batch (the log may give them other ids).
  const createdHere = new Set<string>()

  /**
   * Decides one change against `current`: the event and the row after it, or the error to answer with. `actor`: who
   * asks for it; `of`: the app command it is part of, named on its event.
   */
  const decideOne = (p: Pending | PlannedChange, id: string, current: Row | undefined, seq: number, actor: Actor, of?: PendingCommand): Either.Either<Decided, CommandError> =>
    decideIsolated(
      { type: p.type.name, id, operation: operationOf(p) },
      (): Either.Either<Decided, CommandError | UserCodeFailure> => {
        // A method that threw or returned what cannot be stored is the author's bug: answered 500 and logged.
        const decision = decide(p.type, id, current, p.intent, "expectedVersion" in p ? p.expectedVersion : undefined)
        if (Either.isLeft(decision)) return Either.left(decision.left)
        const dangling = referenceRefusal(p.type, id, operationOf(p), decision.right, rows, overlay)
        if (dangling !== undefined) return Either.left(dangling)
        const event = eventOf(seq, at, p.type.name, id, (current?.version ?? 0) + 1, p.type.version, decision.right, of, actor)
        const row = evolve(current, event) ?? null
        return Either.right({ event, row, before: current ?? null, rowJson: row === null ? null : JSON.stringify(row), uri: rowUri(p.type.name, id) })
      },
      (error, stack) => failures.push({ error, stack })
    )

  /** The row as the batch left it so far (what a command's `ctx.get` and its changes are decided against). */
  const lookup = (type: string, id: string) => {
    // A command's code may spell an id any way ("01"): no row has that name, so no store key is built for it.
    if (!isCanonicalId(id)) return undefined
    const key = streamKey(type, id)
    return overlay.has(key) ? overlay.get(key) ?? undefined : rows.get(type, id)
  }

  /** Decides an app command whole: all of its changes join the batch, or none of them (the overlay untouched). */
  const decideCommand = (p: PendingCommand) => {
    const refuse = (error: CommandError) => {
      if (shared && !p.recheck && mayLag(error._tag)) {
        // This node's rows may not have another node's latest write yet: decide once more, caught up.
        rechecks.push(p)
        again.push(p)
      } else refused.push([p, error])
    }
    // Its ref params are references: each names a live row, or the command is refused as a ref field would be.
    const missing = paramsMissingRefusal(p.command, p.params, lookup)
    if (missing !== undefined) return refuse(missing)
    const planned = planCommand(p.app, p.command, p.params, lookup)
    if (Either.isLeft(planned)) {
      const e = planned.left
      if (e._tag !== "UserCodeFailure") return refuse(e)
      const error = commandFailed(p.command, e)
      failures.push({ error, stack: e.trace })
      return refused.push([p, error])
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
    for (const change of planned.right) {
      const type = change.type.name
      const create = change.intent._tag === "Create"
      const given = create ? nextId(type, ids.get(type) ?? moved.get(type)) : undefined
      if (create && given === undefined) {
        // No id left for it on this node: decided again once it has one.
        rollback()
        return again.push(p)
      }
      const id = given === undefined ? change.id! : String(given)
      if (create) ids.set(type, Number(id))
      // The log may give this batch's creates other ids: a command on one of them waits for the next batch.
      if (shared && !create && createdHere.has(streamKey(type, id))) {
        rollback()
        return again.push(p)
      }
      // Each change is decided as the single-row write would be, with the same checks.
      const one = decideOne(change, id, create ? undefined : lookup(type, id), lastSeq + 1 + decided.length, p.actor, p)
      if (Either.isLeft(one)) {
        rollback()
        return refuse(one.left)
      }
      const key = streamKey(type, id)
      undo.push([key, overlay.has(key), overlay.get(key)])
      overlay.set(key, one.right.row)
      decided.push(one.right)
    }
    if (decided.length === 0) return unchanged.push(p)
    for (const d of decided) {
      lastSeq++
      if (shared && d.event.kind === "created") createdHere.add(streamKey(d.event.type, d.event.id))
      changes.push(d)
    }
    for (const [type, n] of ids) moved.set(type, n)
    waiters.push(p)
    spans.push(decided.length)
  }

  for (const p of batch) {
    if (p.cancelled || skip?.has(p)) continue
    if (p.kind === "command") {
      decideCommand(p)
      continue
    }
    const type = p.type.name
    let id = p.id ?? ""
    if (p.intent._tag === "Create") {
      const given = nextId(type, moved.get(type))
      if (given === undefined) {
        // No id left for it on this node: decided again once it has one.
        again.push(p)
        continue
      }
      id = String(given)
    }
    const key = streamKey(type, id)
    // The log may give this batch's creates other ids: a command on one of them waits for the next batch.
    if (shared && p.intent._tag !== "Create" && createdHere.has(key)) {
      again.push(p)
      continue
    }
    // A create starts a new entity (on a shared log this node's counter may lag: the log picks the id).
    const current = p.intent._tag === "Create" ? undefined : overlay.has(key) ? overlay.get(key) ?? undefined : rows.get(type, id)
    const decided = decideOne(p, id, current, lastSeq + 1, p.actor)
    if (Either.isLeft(decided)) {
      if (shared && !p.recheck && mayLag(decided.left._tag) && !overlay.has(key)) {
        // This node's rows may not have another node's latest write yet: decide once more, caught up.
        rechecks.push(p)
        again.push(p)
      } else refused.push([p, decided.left])
      continue
    }
    if (shared && p.intent._tag === "Create") createdHere.add(key)
    lastSeq++
    if (p.intent._tag === "Create") moved.set(type, Number(id))
    overlay.set(key, decided.right.row)
    changes.push(decided.right)
    waiters.push(p)
    spans.push(1)
  }
  return { changes, waiters, spans, moved, refused, unchanged, again, rechecks, failures }
}
