/**
 * The rows of the PostgreSQL store read on demand, for a node that caches them (projections/rows/cache-rows.ts)
 * instead of loading the whole `rows` table at start: one row by (type, id), a page in id order, a list's page
 * (filtered by equality, ordered by id or a field, as the embedded store's indexes order it), the ids a delete's
 * reference check walks. Each row comes verified (records.ts) with the seq of its last event (`at`, from the unique
 * (type, id, version) index of the events): the tailer applies to a cached row only the events after it.
 *
 * Lists filter (equality, range, set, null test) and order in SQL over the type's rows (`row::jsonb`): no index
 * serves a field yet, so a filtered or ordered page costs a scan of the type's rows in the server, not in this process.
 */
import { Effect, Either } from "effect"
import type { StoreError } from "../../domain/errors.ts"
import type { Filter } from "../../domain/list-request.ts"
import type { RowAt, RowListQuery, RowStore } from "../event-log.ts"
import type { PgConnectionShape } from "./connection.ts"
import { decodeOrFail, decodeRow } from "./records.ts"
import { SCHEMA } from "./schema.ts"
import type { SyncReads } from "./sync-reads.ts"

/** The columns of a row with its last event's seq, from `rows r` joined to `events e` (`ROW_JOIN`). */
const ROW_AT_COLUMNS = "r.type, r.id, r.version, r.schema, r.row::text as row, r.checksum, e.seq::text as at"
const ROW_JOIN = `${SCHEMA}.rows r left join ${SCHEMA}.events e on e.type = r.type and e.id = r.id and e.version = r.version`
const NAMES = ["type", "id", "version", "schema", "row", "checksum", "at"] as const

/** A row read with ROW_AT_COLUMNS, verified; throws RecordCorrupt naming it. */
const rowAt = (raw: Record<string, unknown>): RowAt => {
  const r = decodeRow(raw)
  return { type: r.type, id: r.id, row: r.row, schema: r.schema, at: Number(raw.at ?? 0) }
}

/** The synchronous reads answer arrays of columns: named as ROW_AT_COLUMNS names them. */
const named = (columns: ReadonlyArray<unknown>) => {
  const out: Record<string, unknown> = {}
  NAMES.forEach((name, i) => (out[name] = columns[i]))
  return out
}

const decodedOrThrow = <A>(f: () => A): A => {
  const out = decodeOrFail(f)
  if (Either.isLeft(out)) throw out.left
  return out.right
}

const decodeAll = (raws: ReadonlyArray<Record<string, unknown>>) =>
  Effect.suspend(() => {
    const out = decodeOrFail(() => raws.map(rowAt))
    return Either.isLeft(out) ? Effect.fail(out.left) : Effect.succeed(out.right)
  })

/** A value's rank in the order of domain/value-order.ts: absent (or null), booleans, numbers, strings, anything else. */
const rankOf = (v: unknown) =>
  v === undefined || v === null ? 0 : typeof v === "boolean" ? 1 : typeof v === "number" ? 2 : typeof v === "string" ? 3 : 4

/**
 * The statement's parameters, numbered as they are added. Values that are compared as a field's sort key (a range's
 * bounds, a cursor) go in as that key's four parts, so that SQL compares them as domain/value-order.ts orders values:
 * the value's rank, then the value of its kind (strings in code order: `collate "C"`).
 */
const makeParams = (first: ReadonlyArray<unknown>) => {
  const values: Array<unknown> = [...first]
  const param = (v: unknown) => {
    values.push(v)
    return `$${values.length}`
  }
  const keyOfValue = (v: unknown) => [
    `${param(rankOf(v))}::int`,
    `${param(typeof v === "boolean" ? v : false)}::boolean`,
    `${param(typeof v === "number" ? v : 0)}::numeric`,
    `${param(typeof v === "string" ? v : "")}::text collate "C"`
  ]
  return { values, param, keyOfValue }
}

/** A field's sort key in SQL, in the four parts `keyOfValue` gives a value. */
const keyOfField = (j: string) => [
  `(case coalesce(jsonb_typeof(${j}), 'null') when 'boolean' then 1 when 'number' then 2 when 'string' then 3 when 'null' then 0 else 4 end)`,
  `coalesce(case when jsonb_typeof(${j}) = 'boolean' then (${j})::boolean end, false)`,
  `coalesce(case when jsonb_typeof(${j}) = 'number' then (${j})::numeric end, 0)`,
  `coalesce(case when jsonb_typeof(${j}) = 'string' then ${j} #>> '{}' end, '') collate "C"`
]

/** One filter of a list (domain/list-request.ts) as an SQL condition on the row's JSON. */
const filterCondition = (f: Filter, { param, keyOfValue }: ReturnType<typeof makeParams>): string => {
  const j = `((r.row::jsonb) -> ${param(f.field)})`
  switch (f.op) {
    case undefined:
    case "eq":
      return `${j} = ${param(JSON.stringify(f.value))}::jsonb`
    case "in":
      return `${j} = any(${param(f.values.map((v) => JSON.stringify(v)))}::text[]::jsonb[])`
    case "null":
      return f.isNull ? `coalesce(jsonb_typeof(${j}), 'null') = 'null'` : `coalesce(jsonb_typeof(${j}), 'null') <> 'null'`
    case "range": {
      // A range never holds an absent or null value, whatever its bounds.
      const conditions = [`coalesce(jsonb_typeof(${j}), 'null') <> 'null'`]
      const key = keyOfField(j).join(", ")
      if (f.lower !== undefined) conditions.push(`(${key}) ${f.lower.inclusive ? ">=" : ">"} (${keyOfValue(f.lower.value).join(", ")})`)
      if (f.upper !== undefined) conditions.push(`(${key}) ${f.upper.inclusive ? "<=" : "<"} (${keyOfValue(f.upper.value).join(", ")})`)
      return conditions.join(" and ")
    }
  }
}

/**
 * The SQL of a list's page over the type's live rows, with its parameters: every filter of the `Filter` union
 * (equality, range, set, null test) is a condition on the row's JSON; the sort key of a field order is its value's
 * key (`keyOfField`), then the id, as ordered-index.ts orders; the cursor compares the whole key.
 */
export const listStatement = (type: string, { where, order, after, limit }: RowListQuery) => {
  const params = makeParams([type])
  const { values, param, keyOfValue } = params
  const filters = where.map((f) => filterCondition(f, params))
  const dir = order.descending ? "desc" : "asc"
  const cmp = order.descending ? "<" : ">"
  let keys: Array<string>
  let cursor: Array<string> = []
  if (order.field === "id") {
    keys = ["length(r.id)", "r.id"]
    if (after !== undefined) cursor = [param(String(after.id).length), param(String(after.id))]
  } else {
    keys = [...keyOfField(`((r.row::jsonb) -> ${param(order.field)})`), "length(r.id)", "r.id"]
    if (after !== undefined) cursor = [...keyOfValue(after.value), param(String(after.id).length), param(String(after.id))]
  }
  const conditions = ["r.type = $1", "r.row is not null", ...filters]
  if (cursor.length > 0) conditions.push(`(${keys.join(", ")}) ${cmp} (${cursor.join(", ")})`)
  const text = `select ${ROW_AT_COLUMNS} from ${ROW_JOIN} where ${conditions.join(" and ")}
    order by ${keys.map((k) => `${k} ${dir}`).join(", ")} limit ${param(limit + 1)}`
  return { text, values }
}

export const makeRowStore = (
  conn: PgConnectionShape,
  sync: SyncReads,
  start: RowStore["start"]
): RowStore => {
  let syncReads = 0
  const rowSync = (type: string, id: string): RowAt | undefined => {
    syncReads++
    const rows = sync.query("cannot read a row", `select ${ROW_AT_COLUMNS} from ${ROW_JOIN} where r.type = $1 and r.id = $2`, [type, id])
    return rows.length === 0 ? undefined : decodedOrThrow(() => rowAt(named(rows[0])))
  }
  const pageSync = (type: string, afterId: number, limit: number) => {
    syncReads++
    const after = String(afterId)
    const rows = sync.query(
      "cannot read the rows",
      `select ${ROW_AT_COLUMNS} from ${ROW_JOIN} where r.type = $1 and r.row is not null and (length(r.id), r.id) > ($2, $3)
         order by length(r.id), r.id limit $4`,
      [type, after.length, after, limit + 1]
    )
    const decoded = decodedOrThrow(() => rows.map((columns) => rowAt(named(columns))))
    return { rows: decoded.slice(0, limit), more: decoded.length > limit }
  }
  const page = (type: string, afterId: number, limit: number) => {
    const after = String(afterId)
    return Effect.flatMap(
      conn.query(
        "cannot read the rows",
        `select ${ROW_AT_COLUMNS} from ${ROW_JOIN} where r.type = $1 and r.row is not null and (length(r.id), r.id) > ($2, $3)
           order by length(r.id), r.id limit $4`,
        [type, after.length, after, limit + 1]
      ),
      (r) => Effect.map(decodeAll(r.rows as ReadonlyArray<Record<string, unknown>>), (rows) => ({ rows: rows.slice(0, limit), more: rows.length > limit }))
    )
  }
  const idsWhereSync = (type: string, field: string, value: unknown) => {
    syncReads++
    const rows = sync.query(
      "cannot read the referencing rows",
      `select r.id from ${SCHEMA}.rows r where r.type = $1 and r.row is not null and (r.row::jsonb) -> $2 = $3::jsonb order by length(r.id), r.id`,
      [type, field, JSON.stringify(value)]
    )
    return rows.map((columns) => Number(columns[0]))
  }
  const list = (type: string, query: RowListQuery): Effect.Effect<ReadonlyArray<RowAt>, StoreError> => {
    const { text, values } = listStatement(type, query)
    return Effect.flatMap(conn.query("cannot read the rows", text, values), (r) => decodeAll(r.rows as ReadonlyArray<Record<string, unknown>>))
  }
  const rowsNow = (keys: ReadonlyArray<{ readonly type: string; readonly id: string }>) =>
    Effect.flatMap(
      conn.query(
        "cannot read the rows",
        `select ${ROW_AT_COLUMNS} from ${ROW_JOIN} where (r.type, r.id) in (select * from unnest($1::text[], $2::text[]))`,
        [keys.map((k) => k.type), keys.map((k) => k.id)]
      ),
      (r) => decodeAll(r.rows as ReadonlyArray<Record<string, unknown>>)
    )
  const rowsWhere = (type: string, field: string, value: unknown) =>
    Effect.flatMap(
      conn.query(
        "cannot read the referencing rows",
        `select ${ROW_AT_COLUMNS} from ${ROW_JOIN} where r.type = $1 and r.row is not null and (r.row::jsonb) -> $2 = $3::jsonb
           order by length(r.id), r.id`,
        [type, field, JSON.stringify(value)]
      ),
      (r) => decodeAll(r.rows as ReadonlyArray<Record<string, unknown>>)
    )
  return { start, rowSync, pageSync, idsWhereSync, page, list, rowsWhere, rowsNow, syncReads: () => syncReads }
}
