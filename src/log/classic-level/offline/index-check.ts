/**
 * `wo verify`'s check of the secondary index records (index-keys.ts) against the rows, read-only:
 * - each index state record is readable;
 * - every row of an indexed type has exactly one record in each of its ready indexes (in a building one: every row
 *   up to the backfill's cursor), and every record names a stored row: missing and extra records are named;
 * - a record's values match its row's. The rows are read as stored, without the app: a row written under an older
 *   declaration of its type is served upcast and with defaults, which the store's records follow, so values are
 *   compared only for rows at their type's newest stored schema version that hold every indexed field;
 * - no record lies outside a known index.
 */
import * as X from "../index-keys.ts"
import type { Db } from "../level-db.ts"
import { decodeRow } from "../level-records.ts"
import { forEachRecord } from "../read-batches.ts"
import * as K from "../log-keys.ts"
import { decodeIndexState, type IndexState } from "../store-indexes.ts"

const describe = (e: unknown) => (e instanceof Error ? e.message : String(e))

/** Every key of a range, a batch at a time. */
const forEachKey = (db: Db, gte: string, lt: string, f: (key: string) => void) => forEachRecord(db.keys({ gte, lt }), f)

/** Checks one index against its type's rows. */
const checkIndex = async (db: Db, index: IndexState, problem: (text: string) => void) => {
  const { type, fields, state, after } = index
  const name = `the index on ${X.indexName(fields)} of ${type}`
  const prefix = X.indexPrefix(type, fields)
  const records = new Map<number, string>()
  await forEachKey(db, prefix, X.prefixEnd(prefix), (key) => {
    const id = X.idOfIndexKey(key)
    if (records.has(id)) problem(`${name} holds two records of row ${type}/${id}`)
    records.set(id, key)
  })
  const differing: Array<{ readonly id: number; readonly schema: number }> = []
  let newest = 0
  await forEachRecord(db.iterator({ gte: `${K.ROWS_START}${type}!`, lt: `${K.ROWS_START}${type}!~` }), ([key, value]) => {
    let stored
    try {
      stored = decodeRow(key, value)
    } catch {
      return // reported by the row check
    }
    const id = Number(stored.row.id)
    const schema = stored.schema ?? 1
    newest = Math.max(newest, schema)
    const record = records.get(id)
    records.delete(id)
    if (record === undefined) {
      if (state === "ready" || id <= after) problem(`${name} has no record of row ${type}/${id}`)
      return
    }
    if (fields.every((f) => stored.row[f] !== undefined) && record !== X.indexKey(type, fields, stored.row)) differing.push({ id, schema })
  })
  for (const { id, schema } of differing) if (schema === newest) problem(`${name}: the record of row ${type}/${id} holds other values than the row`)
  for (const id of records.keys()) problem(`${name} has a record of row ${type}/${id}, which is not stored`)
}

/** Checks every index; answers how many indexes were checked. */
export const checkIndexRecords = async (db: Db, problem: (text: string) => void): Promise<number> => {
  const indexes: Array<IndexState> = []
  for await (const [key, value] of db.iterator({ gte: X.INDEX_META_PREFIX, lt: `${X.INDEX_META_PREFIX}~` })) {
    try {
      indexes.push(decodeIndexState(key, value))
    } catch (e) {
      problem(describe(e))
    }
  }
  const known = new Set(indexes.map((i) => X.indexPrefix(i.type, i.fields)))
  const unknown = new Map<string, number>()
  await forEachKey(db, X.INDEXES_START, X.INDEXES_END, (key) => {
    const end = key.indexOf("!", key.indexOf("!", X.INDEXES_START.length) + 1)
    const prefix = key.slice(0, end + 1)
    if (!known.has(prefix)) unknown.set(prefix, (unknown.get(prefix) ?? 0) + 1)
  })
  for (const [prefix, n] of unknown) problem(`${n} index records under ${prefix} belong to no index`)
  for (const index of indexes) await checkIndex(db, index, problem)
  return indexes.length
}
