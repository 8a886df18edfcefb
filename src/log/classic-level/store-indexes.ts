/**
 * The secondary indexes of one open classic-level store (index-keys.ts): which exist, and whether each is built.
 * One registry per open store, shared by the writer, which adds every index's records to the batch of the rows
 * they index (so an index is never behind its rows), and by the rows projection, which walks the ready ones and
 * backfills the others (projections/rows/index-backfill.ts).
 *
 * An index is maintained by the writer from the moment it is registered: its state record is written while no
 * batch is in flight (`LevelDbShape.writeAlone`), so every batch after it carries its records, and the backfill
 * covers the rows written before.
 */
import { Effect } from "effect"
import type { Row } from "../../domain/catalog.ts"
import type { StoreError } from "../../domain/errors.ts"
import * as X from "./index-keys.ts"
import type { Db, LevelDbShape } from "./level-db.ts"
import { seal, unsealJson } from "../record.ts"

export interface IndexState {
  readonly type: string
  readonly fields: ReadonlyArray<string>
  /** building: rows with ids up to `after` are in it (and every row written since it was registered); ready: all. */
  readonly state: "building" | "ready"
  readonly after: number
  /** The digest of the type's declaration the entries were computed under (a change rebuilds it). */
  readonly schema: string
}

/** The operations of a chained batch the records need. */
interface BatchOps {
  put(key: string, value: string): unknown
  del(key: string): unknown
}

export const encodeIndexState = (s: IndexState) => seal(X.indexMetaKey(s.type, s.fields), JSON.stringify({ state: s.state, after: s.after, schema: s.schema }))

export const decodeIndexState = (key: string, value: string): IndexState => {
  const { type, fields } = X.ofIndexMetaKey(key)
  const record = unsealJson<{ state: "building" | "ready"; after: number; schema: string }>(key, value)
  return { type, fields, state: record.state, after: record.after, schema: record.schema }
}

/** Every index state record of a store. */
export const readIndexStates = async (db: Db): Promise<Array<IndexState>> => {
  const out: Array<IndexState> = []
  for await (const [key, value] of db.iterator({ gte: X.INDEX_META_PREFIX, lt: `${X.INDEX_META_PREFIX}~` })) out.push(decodeIndexState(key, value))
  return out
}

export class StoreIndexes {
  private readonly byType = new Map<string, Map<string, IndexState>>()

  constructor(states: Iterable<IndexState>) {
    for (const s of states) this.set(s)
  }

  /** Whether `type` has any index (the writer's cheap test per entry). */
  has(type: string): boolean {
    return (this.byType.get(type)?.size ?? 0) > 0
  }

  /** The indexes of `type` the writer maintains (building or ready). */
  of(type: string): Iterable<IndexState> {
    return this.byType.get(type)?.values() ?? []
  }

  get(type: string, fields: ReadonlyArray<string>): IndexState | undefined {
    return this.byType.get(type)?.get(X.indexName(fields))
  }

  all(): Array<IndexState> {
    return [...this.byType.values()].flatMap((m) => [...m.values()])
  }

  set(s: IndexState): void {
    let m = this.byType.get(s.type)
    if (m === undefined) this.byType.set(s.type, (m = new Map()))
    m.set(X.indexName(s.fields), s)
  }

  remove(type: string, fields: ReadonlyArray<string>): void {
    this.byType.get(type)?.delete(X.indexName(fields))
  }

  /** Adds to `batch` what a row of `type` going from `before` to `row` (null: absent) changes in its indexes. */
  write(batch: BatchOps, type: string, before: Row | null, row: Row | null): void {
    const indexes = this.byType.get(type)
    if (indexes === undefined || indexes.size === 0) return
    for (const { fields } of indexes.values()) {
      const old = before === null ? undefined : X.indexKey(type, fields, before)
      const next = row === null ? undefined : X.indexKey(type, fields, row)
      if (old === next) continue
      if (old !== undefined) batch.del(old)
      if (next !== undefined) batch.put(next, "")
    }
  }
}

const registries = new WeakMap<LevelDbShape, Promise<StoreIndexes>>()

/** The registry of the store `h` opened, read from its state records once. */
export const storeIndexes = (h: LevelDbShape): Effect.Effect<StoreIndexes, StoreError> =>
  Effect.suspend(() => {
    const known = registries.get(h)
    if (known !== undefined) return Effect.promise(() => known)
    return Effect.tap(h.read("cannot read the index records", async (db) => new StoreIndexes(await readIndexStates(db))), (r) =>
      Effect.sync(() => {
        if (!registries.has(h)) registries.set(h, Promise.resolve(r))
      })).pipe(Effect.flatMap(() => Effect.promise(() => registries.get(h)!)))
  })
