/**
 * `wo verify --store postgres://...`: the checks of `wo verify` (../classic-level/offline/verify.ts) on a PostgreSQL
 * store, reading the tables in seq (and key) order, a batch at a time, naming every problem it finds:
 * - every event, row and type record against its checksum (an event's in either form, records.ts: keyed by its seq,
 *   or, since seq-shiftable batches, by its entity and version; the seq continuity and per-entity version checks
 *   below are what catch an event moved to another seq in the second form, but for a swap across entities);
 * - seq continuity from 1 to the head (log_head);
 * - version continuity per entity (1 for the create, then +1; nothing after a delete);
 * - each stored row at its entity's last version (a tombstone for a deleted one), and a row for every entity;
 * - id counters at or above the highest id used, and row counts as recorded;
 * - every idempotency key's checksum and shape, and its answer within the log;
 * - with the app's reference fields (`wo verify --app`), every live row's references to live rows
 *   (reference-audit.ts).
 * Several nodes may be writing: the whole check reads one snapshot (a repeatable-read transaction).
 */
import { Effect } from "effect"
import type { StoreError } from "../../domain/errors.ts"
import { streamKey } from "../../domain/events.ts"
import { describeProblem as describe, makeProblems, makeStoreRules, type VerifyReport } from "../store-rules.ts"
import type { PgConnectionShape } from "./connection.ts"
import { decodeEvent, decodeRow, decodeStoredKey, decodeType, EVENT_COLUMNS, KEY_COLUMNS, ROW_COLUMNS, TYPE_COLUMNS } from "./records.ts"
import { SCHEMA } from "./schema.ts"
import { makeReferenceAudit, type ReferenceFields } from "../reference-audit.ts"

const BATCH = 5000

export const verifyPostgresStore = (conn: PgConnectionShape, references?: ReferenceFields): Effect.Effect<VerifyReport, StoreError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const client = yield* conn.client
      const q = (what: string, text: string, values?: ReadonlyArray<unknown>) =>
        Effect.tryPromise({ try: () => client.query(text, values as Array<unknown> | undefined), catch: (e) => conn.failed(what, e) })
      const started = Date.now()
      const found = makeProblems()
      const problem = found.add
      const rules = makeStoreRules(problem)
      /** Every row of a query paged by its keys, BATCH a page: `after` is the key past the rows handed to `f`. */
      const eachRow = (what: string, text: string, after: () => ReadonlyArray<unknown>, f: (raw: any) => void) =>
        Effect.gen(function* () {
          for (;;) {
            const page = yield* q(what, text, [...after(), BATCH])
            if (page.rows.length === 0) return
            for (const raw of page.rows) f(raw)
          }
        })
      yield* q("cannot begin", "begin isolation level repeatable read read only")

      // Events: checksums, seq continuity, per-entity version continuity, highest id per type.
      let events = 0
      const eventsAfter = `select ${EVENT_COLUMNS} from ${SCHEMA}.events e where e.seq > $1 order by e.seq limit $2`
      yield* eachRow("cannot read the log", eventsAfter, () => [rules.lastSeq], (raw) => {
        events++
        const seq = Number(raw.seq)
        rules.seq(seq, String(seq))
        let event
        try {
          event = decodeEvent(raw)
        } catch (e) {
          return problem(describe(e))
        }
        rules.event(seq, event)
      })
      const head = Number((yield* q("cannot read the log head", `select seq::text as seq from ${SCHEMA}.log_head`)).rows[0]?.seq ?? 0)
      if (head !== rules.lastSeq) problem(`the log head is at seq ${head}, the last event is ${rules.lastSeq}`)

      // Rows (tombstones included): checksums, each at its entity's last version, live ones counted per type; their
      // references, with the app's fields.
      const audit = references === undefined ? undefined : makeReferenceAudit(references, rules.versionOf, problem)
      let rows = 0
      const livePerType = new Map<string, number>()
      const rowed = new Set<string>()
      let cursor: [string, number, string] = ["", -1, ""]
      const rowsAfter = `select ${ROW_COLUMNS} from ${SCHEMA}.rows where (type, length(id), id) > ($1, $2, $3) order by type, length(id), id limit $4`
      yield* eachRow("cannot read the rows", rowsAfter, () => cursor, (raw) => {
        cursor = [raw.type, String(raw.id).length, raw.id]
        let stored
        try {
          stored = decodeRow(raw)
        } catch (e) {
          return problem(describe(e))
        }
        const entity = streamKey(stored.type, stored.id)
        rowed.add(entity)
        if (stored.row === null) {
          const version = rules.versionOf(entity)
          if (version !== -1) problem(`row ${entity} is a tombstone, but the log ${version === undefined ? "has no events for it" : `has it live at version ${version}`}`)
          return
        }
        rows++
        livePerType.set(stored.type, (livePerType.get(stored.type) ?? 0) + 1)
        rules.row(entity, stored.version)
        audit?.row(stored.type, stored.row)
      })
      rules.missingRows(rowed)

      // Types: id counters and live row counts.
      const types = (yield* q("cannot read the id counters", `select ${TYPE_COLUMNS} from ${SCHEMA}.types`)).rows
      const recorded = new Map<string, { lastId: number; rowCount: number }>()
      for (const raw of types) {
        try {
          const t = decodeType(raw)
          recorded.set(t.type, t)
        } catch (e) {
          problem(describe(e))
        }
      }
      for (const [type, id] of rules.maxId) rules.idCounter(type, recorded.get(type)?.lastId, id)
      rules.rowCounts(new Map([...recorded].map(([type, t]) => [type, t.rowCount])), livePerType)
      // Idempotency keys: each one's checksum and shape, and its answer's events within the log.
      let keyCursor = ""
      const keysAfter = `select ${KEY_COLUMNS} from ${SCHEMA}.idempotency_keys where key > $1 order by key limit $2`
      yield* eachRow("cannot read the idempotency keys", keysAfter, () => [keyCursor], (raw) => {
        keyCursor = raw.key
        try {
          rules.keyAnswer(raw.key, decodeStoredKey(raw).entries)
        } catch (e) {
          problem(describe(e))
        }
      })
      yield* q("cannot end", "commit")
      return found.report(events, rows, started)
    })
  )
