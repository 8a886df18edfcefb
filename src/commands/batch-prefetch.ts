/**
 * The writer's reads on a node whose rows are a cache of the PostgreSQL store (projections/rows/cache-rows.ts). A
 * decision is synchronous (a command's `ctx.get`, the reference checks), so the rows a batch needs are read before
 * it is decided, asynchronously: the event loop goes on serving while the store answers.
 *
 * The batch is first decided against what is known without the store (the rows the cache holds, and those read for
 * this batch so far), each other row it reads being noted as a miss (and read as absent). Deciding is pure
 * (decide-batch.ts: it reads rows, changes nothing and calls nobody back), so such a decision is dropped when it
 * noted a miss: the misses are read from the store in one statement (and a delete's referencing rows, one statement
 * per field and value), and the batch is decided again. A command reads rows named by the rows it read (a return
 * reads the loan, then its book): each round reads one step further. After READ_ROUNDS rounds, what is still not
 * known is read synchronously by the decision itself (counted: the store's `syncReads`).
 *
 * The rows read may be older than a commit another node makes meanwhile: the log's optimistic check at commit
 * refuses such a batch's stale entries, which are decided again, as with rows of the cache itself.
 */
import { Effect } from "effect"
import type { Row } from "../domain/catalog.ts"
import type { StoreError } from "../domain/errors.ts"
import { streamKey } from "../domain/events.ts"
import { NOT_HELD } from "../projections/rows/cache-table.ts"
import type { RowTableShape } from "../projections/rows/row-table.ts"
import type { CachedRows, RowsShape } from "../projections/rows/rows.ts"
import { decideBatch, type BatchStart, type DecidedBatch } from "./decide-batch.ts"
import type { Queued } from "./submission.ts"

/** How many times a batch's misses are read before its decision reads what is left synchronously. */
export const READ_ROUNDS = 4

interface Known {
  /** Rows read for this batch, by stream key (null: none, or deleted). */
  readonly rows: Map<string, Row | null>
  /** Referencing ids read for this batch, by `whereKey`. */
  readonly ids: Map<string, ReadonlyArray<number>>
}

interface Misses {
  readonly rows: Map<string, { readonly type: string; readonly id: string }>
  readonly wheres: Map<string, { readonly type: string; readonly field: string; readonly value: unknown }>
}

const whereKey = (type: string, field: string, value: unknown) => `${type}\u0000${field}\u0000${JSON.stringify(value)}`

/**
 * `rows` as a decision reads them for this batch: the cache's rows, then those read for the batch; anything else is
 * a miss, noted in `misses` and read as absent, or (no `misses`: the last round) read from the store synchronously.
 */
const batchRows = (rows: RowsShape, cached: CachedRows, known: Known, misses?: Misses): RowsShape => {
  const get = (type: string, id: string): Row | undefined => {
    const hit = cached.hit(type, id)
    if (hit !== NOT_HELD) return hit
    const key = streamKey(type, id)
    if (known.rows.has(key)) return known.rows.get(key) ?? undefined
    if (misses === undefined) return rows.get(type, id)
    misses.rows.set(key, { type, id })
    return undefined
  }
  const table = (type: string): RowTableShape => {
    const t = rows.table(type)
    return {
      get size() {
        return t.size
      },
      get: (id) => get(type, id),
      page: (after, limit) => t.page(after, limit),
      read: (query) => t.read(query),
      idsWhere: (field, value) => {
        const key = whereKey(type, field, value)
        const ids = known.ids.get(key)
        if (ids !== undefined) return ids
        if (misses === undefined) return t.idsWhere(field, value)
        misses.wheres.set(key, { type, field, value })
        return []
      }
    }
  }
  return { ...rows, get, table }
}

/** Reads the misses into `known`: the rows in one statement, each delete's referencing rows in one statement each. */
const readMisses = (cached: CachedRows, known: Known, misses: Misses): Effect.Effect<void, StoreError> =>
  Effect.zipRight(
    misses.rows.size === 0
      ? Effect.void
      : Effect.map(cached.fetch([...misses.rows.values()]), (found) => {
          for (const [key, row] of found) known.rows.set(key, row)
        }),
    Effect.forEach(misses.wheres, ([key, { type, field, value }]) =>
      Effect.map(cached.fetchIdsWhere(type, field, value), (ids) => void known.ids.set(key, ids)), { discard: true })
  )

/**
 * Decides `batch` as decideBatch does, on a node whose rows are a cache (`rows.cached`) having first read from the
 * store what it needs; elsewhere at once. Fails only when the store cannot be read.
 */
export const decideAhead = (
  batch: ReadonlyArray<Queued>,
  rows: RowsShape,
  start: BatchStart,
  skip?: ReadonlySet<Queued>
): Effect.Effect<DecidedBatch, StoreError> => {
  const cached = rows.cached
  if (cached === undefined) return Effect.sync(() => decideBatch(batch, rows, start, skip))
  const known: Known = { rows: new Map(), ids: new Map() }
  const round = (n: number): Effect.Effect<DecidedBatch, StoreError> =>
    Effect.suspend(() => {
      if (n === READ_ROUNDS) return Effect.sync(() => decideBatch(batch, batchRows(rows, cached, known), start, skip))
      const misses: Misses = { rows: new Map(), wheres: new Map() }
      const decided = decideBatch(batch, batchRows(rows, cached, known, misses), start, skip)
      if (misses.rows.size === 0 && misses.wheres.size === 0) return Effect.succeed(decided)
      return Effect.zipRight(readMisses(cached, known, misses), round(n + 1))
    })
  return round(0)
}
