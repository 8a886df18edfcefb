/**
 * One group-commit batch, appended to the shared log by the function `writeonce.append_batch` (schema.ts): one
 * statement, so one round trip when this node's picture of the log is right. Several nodes append to the same log:
 *
 *   1. plan (append-plan.ts): against a picture of the log (the head, the batch's idempotency keys already stored,
 *      its entities' stored versions, the highest id handed out in the types it creates in), assign the batch's
 *      seqs from the head on; keep each create's id when the store handed it out (the node's block of ids,
 *      commands/id-blocks.ts) and no row has it, else give it its type's next id (the row rewritten to it); leave out as
 *      `Duplicate` a submission whose key is stored (another node, or an attempt whose commit failed but landed,
 *      wrote it), as `Stale` an entry decided against a row another node has since moved on (and every later entry
 *      of that entity in the batch); an app command's entries (one correlation) are one group: if one of them is
 *      stale, or one of its creates would get another id than the one it was decided with, every entry of the
 *      group is `Stale`;
 *   2. the function locks the log_head row (every writer, on any node, queues here: seq order is commit order,
 *      without gaps), checks that the log is exactly as pictured, and only then writes the plan: the events, the
 *      rows after them (the inline projection), the id counters and row counts (moved by the batch, not checked:
 *      creates of several nodes in one type never refuse each other), the views, the keys of the
 *      submissions written (with their entries as written: the answer), the new head, and `pg_notify` of it.
 *      When only the head is wrong (other nodes committed meanwhile, to other entities) and the batch is shiftable (no idempotency key, no view record: their stored answers and
 *      records name seqs; the events' checksums name none, records.ts), it writes the plan after those commits,
 *      every seq moved by as many, and answers the shift: the batch's result moves with it (`shifted`). This is
 *      what keeps several nodes' appends from missing each other: each call queued on the lock behind another
 *      node's commit would otherwise find the head moved and be planned and sent again.
 *      Otherwise it writes nothing and answers the log as it is, which the batch is planned against again;
 *   3. commit: with `synchronous_commit=on` and `ANY 1 (s1, s2)`, it returns once the batch is fsynced on the
 *      primary and on at least one standby.
 *
 * The batch's idempotency keys are read only here: the writer sends none before (group-commit.ts), so a batch is one
 * round trip when no key of it is stored. A claim of no entry (`count` 0: a submission the writer refused or that
 * changed nothing) is a probe: planned like any claim, so the function answers it when it is stored, and never
 * written.
 *
 * The first attempt pictures the log as this node last saw it (`LogPicture`: the head and counters of its last
 * append) with the versions the batch was decided on, and runs alone (its own transaction: one round trip). When
 * the picture was wrong (another node wrote meanwhile), the batch is planned again on the log the function
 * answered and runs alone once more: no lock is held between round trips, so a node whose event loop is busy never
 * stalls the other nodes' appends. A batch with nothing left to write on the log as answered (every entry a
 * duplicate or stale) is settled by that answer. Only when the log moved again in between is it planned in a
 * transaction: a miss there leaves the function's lock held, so the next plan is certain, and its commit is sent
 * right behind it (the lock is not held over a turn of this node's event loop).
 *
 * If the wait for a standby is cancelled (PostgreSQL then warns that the commit is local only), the append
 * fails: the caller is not acknowledged, and the writer's resync finds the events on its next batch.
 */
import { Effect, Either } from "effect"
import type pg from "pg"
import { type StoreError, StoreFailed } from "../../domain/errors.ts"
import { streamKey } from "../../domain/events.ts"
import { isWritten, Stale, type AppendBatch, type AppendResult } from "../event-log.ts"
import { expected, plan, shifted, touchedBy, type LogState, type Planned } from "./append-plan.ts"
import type { PgConnectionShape } from "./connection.ts"
import { makeLogPicture, pictureAt, type LogPicture } from "./log-picture.ts"
import { decodeOrFail, decodeStoredKey, decodeType } from "./records.ts"
import { SCHEMA } from "./schema.ts"

/** The picture's maker, beside the append that takes one (bench/pg-append-ab.ts compares this module across checkouts). */
export { makeLogPicture }

/** What an append did, for the log: its result, and the last event it wrote (the tailer's divergence check). */
export interface Appended {
  readonly result: AppendResult
  readonly last?: { readonly seq: number; readonly checksum: string }
}

const QUOTED = /["\\]/g
/**
 * An array argument as the PostgreSQL array literal `pg` would send for it: numbers bare, strings quoted in one pass
 * (pg quotes every element, numbers too, in two regex passes: a few µs per write).
 */
const arrayLiteral = (values: ReadonlyArray<string | number | boolean | null | undefined>) => {
  let out = "{"
  for (let i = 0; i < values.length; i++) {
    const v = values[i]
    if (i > 0) out += ","
    out += v == null ? "NULL" : typeof v === "number" ? String(v) : typeof v === "boolean" ? (v ? "t" : "f") : `"${v.replace(QUOTED, "\\$&")}"`
  }
  return `${out}}`
}
const argument = (value: unknown) => (Array.isArray(value) ? arrayLiteral(value) : value)

/** The call of the function; its arguments are whether it runs alone, whether the batch is shiftable, then `plan`'s, in order. */
const CALL = `select ${SCHEMA}.append_batch(${Array.from({ length: 51 }, (_, i) => `$${i + 1}`).join(", ")}) as log`
/** The error the function raises, alone, when the log is not as pictured (its detail: the log as it is). */
const NOT_AS_PICTURED = "WO001"

/** What the function answered for a batch it wrote after other nodes' commits: by how many seqs it moved it. */
interface ShiftAnswer {
  readonly shift: string
}
/** The log as the function answered it (it wrote nothing: the batch's picture was wrong). */
interface Answer {
  readonly head: string
  readonly keys: ReadonlyArray<{ key: string; result: string; checksum: string }>
  readonly versions: ReadonlyArray<{ type: string; id: string; version: number }>
  readonly types: ReadonlyArray<{ type: string; last_id: string; row_count: string; checksum: string }>
  /** The batch's creates whose id a row has already. */
  readonly taken?: ReadonlyArray<{ type: string; id: string }>
  /** The batch's referenced rows that are not live, and its deleted rows that a newer live row references. */
  readonly missing?: ReadonlyArray<{ type: string; id: string }>
  readonly referenced?: ReadonlyArray<{ type: string; id: string }>
}

const decodeAnswer = (a: Answer): Either.Either<LogState, StoreError> =>
  decodeOrFail(() => ({
    head: Number(a.head),
    keys: new Map(a.keys.map((k) => [k.key, decodeStoredKey(k)])),
    versions: new Map(a.versions.map((v) => [streamKey(v.type, v.id), v.version])),
    counts: new Map(a.types.map((raw) => {
      const t = decodeType(raw)
      return [t.type, { lastId: t.lastId, rowCount: t.rowCount }] as const
    })),
    taken: new Set((a.taken ?? []).map((t) => streamKey(t.type, t.id))),
    missing: new Set((a.missing ?? []).map((m) => streamKey(m.type, m.id))),
    referenced: new Set((a.referenced ?? []).map((r) => streamKey(r.type, r.id)))
  }))

/**
 * Per pooled connection, whether PostgreSQL warned that a commit's wait for the standbys was cancelled (the commit
 * then returns, local only). The listener is added once per connection, not per batch.
 */
const noticeWatches = new WeakMap<pg.PoolClient, { localOnly: string | undefined }>()
const watchNotices = (client: pg.PoolClient) => {
  let watch = noticeWatches.get(client)
  if (watch === undefined) {
    const w: { localOnly: string | undefined } = { localOnly: undefined }
    client.on("notice", (n: { readonly message?: string; readonly detail?: string }) => {
      if (/synchronous replication|might not have been replicated/i.test(`${n.message ?? ""} ${n.detail ?? ""}`)) w.localOnly = n.message ?? "warning"
    })
    noticeWatches.set(client, w)
    watch = w
  }
  watch.localOnly = undefined
  return watch
}

/** A head no log has: the function then writes nothing and answers the log as it is. */
const UNKNOWN_HEAD = -1
/** Calls alone before the transaction: on the node's picture, then on the log as the function answered it. */
const ALONE_ATTEMPTS = 2
/** Plans in the transaction: the second is made on the log as read under the lock, and is written. */
const PLANS_IN_TRANSACTION = 2

/** Appends the batch, with no picture of the log (planned on the log as the function answers it). */
export const appendBatch = (conn: PgConnectionShape, batch: AppendBatch): Effect.Effect<AppendResult, StoreError> =>
  Effect.map(appendPictured(conn, batch, makeLogPicture(UNKNOWN_HEAD, []), ""), (a) => a.result)

/**
 * Appends the batch; succeeds once the commit is durable. `picture` is this node's picture of the log, updated
 * here; `tag` names this node in the notification (its own tailer need not read what it wrote).
 */
export const appendPictured = (conn: PgConnectionShape, batch: AppendBatch, picture: LogPicture, tag: string): Effect.Effect<Appended, StoreError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const client = yield* conn.client
      // Bounded as a whole (WO_STORE_TIMEOUT): a paused primary fails the batch (503) instead of holding every writer.
      // (The wait for a pooled connection before it has its own bound, the pool's connection timeout.)
      const deadline = conn.deadline()
      yield* Effect.addFinalizer(() => Effect.sync(deadline.clear))
      const send = <R extends pg.QueryResultRow>(text: string, values?: ReadonlyArray<unknown>) =>
        deadline.within(client.query<R>(text, values as Array<unknown> | undefined))
      const q = (what: string, text: string) => Effect.tryPromise({ try: () => send(text), catch: (e) => conn.failed(what, e) })
      const notices = watchNotices(client)
      const touched = touchedBy(batch)
      // Nothing of the batch but its events' seqs names a seq (schema.ts: the function checks it again).
      const shiftable = (batch.keys ?? []).length === 0 && (batch.views ?? []).length === 0
      /**
       * Calls the function: the shift (0: as planned) when it wrote the plan, else the log as it is. Alone, it answers by an error
       * (which ends its transaction without a commit to wait for); in a transaction, it answers and keeps the lock.
       * `thenCommit` (in a transaction whose lock is held, so the plan is certain) sends the commit right behind the
       * call: the lock is not held over a turn of this node's event loop between the two.
       */
      const call = (planned: Planned, alone: boolean, head = planned.args[0], thenCommit = false) =>
        Effect.flatMap(Effect.sync(() => picture.cost.calls++), () => Effect.flatMap(
          Effect.tryPromise({
            try: () => {
              const called = send<{ log: Answer | ShiftAnswer | null }>(CALL, [alone, shiftable && head !== UNKNOWN_HEAD, head, ...planned.args.slice(1).map(argument)]).then(
                (r) => r.rows[0]?.log ?? undefined,
                (e: { code?: string; detail?: string }) => {
                  if (e?.code === NOT_AS_PICTURED && typeof e.detail === "string") return JSON.parse(e.detail) as Answer
                  throw e
                }
              )
              if (!thenCommit) return called
              // After a failed call the commit ends the aborted transaction (PostgreSQL rolls it back): the call's error stands.
              const committed = send("commit").then(() => undefined, (e: unknown) => ({ commitFailed: e }))
              return called.then(
                (answer) => committed.then((c) => {
                  if (c !== undefined) throw c
                  return answer
                }),
                (e) => committed.then(() => Promise.reject(e))
              )
            },
            catch: (e) =>
              typeof e === "object" && e !== null && "commitFailed" in e
                ? conn.failed("the commit failed (its outcome is unknown until the log is read again)", e.commitFailed)
                : conn.failed("cannot write the batch", e)
          }),
          (answer): Effect.Effect<LogState | number, StoreError> => {
            if (answer === undefined) return Effect.succeed(0)
            if ("shift" in answer) {
              const shift = Number(answer.shift)
              return Number.isInteger(shift) && shift > 0
                ? Effect.succeed(shift)
                : Effect.fail(new StoreFailed({ reason: `the append function answered a shift of ${answer.shift} (a bug)` }))
            }
            const state = decodeAnswer(answer)
            return Either.isLeft(state) ? Effect.fail(state.left) : Effect.succeed(state.right)
          }
        ))
      const durable = (planned: Planned, shift: number) =>
        Effect.suspend(() => {
          if (notices.localOnly !== undefined) {
            return Effect.fail(new StoreFailed({
              reason: `the batch committed on the primary, but no standby confirmed it (${notices.localOnly}); not acknowledged`
            }))
          }
          // Written after other nodes' commits: the picture's head is past them, and its counters of the batch's
          // types include them (the function checked that none moved); those of other types count their events
          // when they are delivered (seePicture).
          const { result, last } = shifted(planned, shift)
          tally(result)
          if (shift > 0) picture.cost.shifted++
          pictureAt(picture, result.lastSeq, planned.counts)
          return Effect.succeed({ result, ...(last === undefined ? {} : { last }) } satisfies Appended)
        })
      /** Counts what the log refused or renumbered of the batch (the cost of contention, postgres-log.ts's Debug line). */
      const tally = (result: AppendResult) => {
        result.outcomes.forEach((o, i) => {
          if (o === Stale) picture.cost.stale++
          else if (isWritten(o) && o.event.kind === "created" && o.event.id !== batch.entries[i].event.id) picture.cost.renumbered++
        })
        return result
      }
      const remember = (state: LogState) =>
        pictureAt(picture, state.head, [...touched.types].map((type) => [type, state.counts.get(type) ?? { lastId: 0, rowCount: 0 }] as const))

      picture.cost.batches++
      picture.cost.events += batch.entries.length
      // Alone (one round trip, no lock held between round trips), on the log as this node pictures it, then once more
      // on the log as the function answered it (right unless another node wrote in between).
      let state: LogState | undefined
      for (let attempt = 0; ; attempt++) {
        const planned = plan(batch, state ?? expected(picture, touched), touched, tag)
        // Nothing left to write on the log as the function answered it: every entry is a duplicate (its key is
        // stored) or stale (its entity, or its type's id counter, has moved on). A stored key's answer stands, and
        // versions and counters only grow: a read under the lock would settle it no differently, so no transaction.
        if (!planned.writes && state !== undefined) return { result: tally(planned.result) } satisfies Appended
        if (!planned.writes || attempt === ALONE_ATTEMPTS) break
        const answered = yield* call(planned, true)
        if (typeof answered === "number") {
          if (attempt === 0) picture.cost.firstCall++
          return yield* durable(planned, answered)
        }
        remember(answered)
        state = answered
      }

      // In a transaction: the function's answer is then the log under the lock, which the next plan is certain of.
      picture.cost.transactions++
      yield* q("cannot begin the append", "begin")
      let locked = false
      for (let attempt = 0; attempt < PLANS_IN_TRANSACTION; attempt++) {
        const planned = plan(batch, state ?? { head: UNKNOWN_HEAD, keys: new Map(), versions: new Map(), counts: new Map() }, touched, tag)
        if (locked && !planned.writes) {
          // Nothing is left to write (every entry stale or a duplicate).
          yield* q("cannot end the append", "rollback")
          return { result: tally(planned.result) } satisfies Appended
        }
        // Under the lock the plan is certain: its commit goes right behind it.
        const answered = yield* call(planned, false, state !== undefined && planned.writes ? planned.args[0] : UNKNOWN_HEAD, locked)
        if (typeof answered === "number") {
          if (!locked) yield* q("the commit failed (its outcome is unknown until the log is read again)", "commit")
          return yield* durable(planned, answered)
        }
        // The commit sent behind the call ended the transaction (it wrote nothing).
        if (locked) break
        remember(answered)
        state = answered
        locked = true
      }
      if (!locked) yield* q("cannot end the append", "rollback")
      return yield* new StoreFailed({ reason: "the log changed under its lock while the batch was planned (a bug): not written" })
    })
  )
