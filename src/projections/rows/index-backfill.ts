/**
 * Builds a secondary index of the classic-level store for the rows written before it existed, in the background,
 * a chunk of rows at a time. Each chunk reads the next rows in id order from the stored cursor (`after`), writes
 * their index records and the new cursor in one batch, while no other write is in flight (`writeAlone`): the
 * writer's batches go on between chunks, and each one maintains the index itself from the moment it was
 * registered, so no record is ever written from a row that changed meanwhile. After kill -9 the index is still
 * `building` at its last stored cursor, and the backfill resumes from there (its puts are idempotent).
 *
 * A new index starts by clearing its key range (records an earlier, unfinished registration may have left).
 */
import { Effect } from "effect"
import type { Row } from "../../domain/catalog.ts"
import { isStoreError, StoreFailed, type StoreError } from "../../domain/errors.ts"
import * as X from "../../log/classic-level/index-keys.ts"
import type { Db, LevelDbShape } from "../../log/classic-level/level-db.ts"
import { READ_BATCH } from "../../log/classic-level/level-records.ts"
import * as K from "../../log/classic-level/log-keys.ts"
import { readBatches } from "../../log/classic-level/read-batches.ts"
import { encodeIndexState, type IndexState, type StoreIndexes } from "../../log/classic-level/store-indexes.ts"
import { longWork } from "../../support/turnstile.ts"

/**
 * Rows per chunk: the longest the writer, or a list answered by a bounded scan meanwhile, waits for the backfill
 * is one chunk (about a millisecond). Smaller than 500 trimmed those waits without slowing the build much (bench scale).
 */
export const BACKFILL_CHUNK = 128

export interface BackfillAccess {
  readonly store: LevelDbShape
  readonly registry: StoreIndexes
  /**
   * A stored row as served (verified, upcast, normalised), or at least its values of `fields`: what the writer's
   * records are computed from.
   */
  readonly decode: (type: string, key: string, raw: string, fields: ReadonlyArray<string>) => Row
  /** The digest of a type's declaration, stored with each index (a change rebuilds it). */
  readonly schemaOf: (type: string) => string
}

export class IndexBackfill {
  private readonly running = new Map<string, Promise<void>>()
  private stopped = false
  /** Chunks written, for tests and the bench. */
  chunks = 0

  constructor(private readonly access: BackfillAccess) {}

  /** Whether the index on `fields` of `type` is ready to walk. */
  isReady(type: string, fields: ReadonlyArray<string>): boolean {
    return this.access.registry.get(type, fields)?.state === "ready"
  }

  /** Registers the index (if new) and backfills it; resolves once it is ready. Callers asking meanwhile share the run. */
  ready(type: string, fields: ReadonlyArray<string>): Effect.Effect<void, StoreError> {
    if (this.isReady(type, fields)) return Effect.void
    return this.await(type, fields, () => this.runOf(type, fields))
  }

  /**
   * Starts the backfill in the background unless the index is ready or being built; its end is logged (a list that
   * needs it meanwhile is answered without it: StoreTable.scan).
   */
  start(type: string, fields: ReadonlyArray<string>): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.isReady(type, fields) || this.running.has(X.indexPrefix(type, fields))) return Effect.void
      // Registered now, so that the requests that follow share this run.
      const run = this.runOf(type, fields)
      return Effect.asVoid(Effect.forkDaemon(this.logged(type, fields, this.await(type, fields, () => run))))
    })
  }

  /** The build of an index, logged: built, or not built (a list that needs it starts it again). */
  logged(type: string, fields: ReadonlyArray<string>, build = this.ready(type, fields)): Effect.Effect<void> {
    return build.pipe(
      Effect.tap(() => Effect.logInfo(`index on ${X.indexName(fields)} of ${type}: built`)),
      Effect.catchAll((e) => Effect.logWarning(`index on ${X.indexName(fields)} of ${type}: not built (${e.reason}); a list that needs it builds it again`))
    )
  }

  private await(type: string, fields: ReadonlyArray<string>, run: () => Promise<void>): Effect.Effect<void, StoreError> {
    return Effect.tryPromise({
      try: run,
      catch: (e) => isStoreError(e) ? e : new StoreFailed({ reason: `cannot build the index on ${X.indexName(fields)} of ${type}: ${e instanceof Error ? e.message : String(e)}` })
    })
  }

  /** The backfill of the index, started by the first caller and shared by the others until it ends. */
  private runOf(type: string, fields: ReadonlyArray<string>): Promise<void> {
    const name = X.indexPrefix(type, fields)
    let run = this.running.get(name)
    if (run === undefined) {
      run = this.run(type, fields).finally(() => this.running.delete(name))
      this.running.set(name, run)
    }
    return run
  }

  /** Stops between chunks (the store is closing); an index left building resumes at the next start. */
  stop(): void {
    this.stopped = true
  }

  private async run(type: string, fields: ReadonlyArray<string>): Promise<void> {
    const { writeAlone } = this.access.store
    if (writeAlone === undefined) throw new StoreFailed({ reason: "this store cannot build indexes (it is open read-only)" })
    for (;;) {
      if (this.stopped) throw new StoreFailed({ reason: "the store is closing: the index build resumes at the next start" })
      const done = await Effect.runPromise(Effect.either(writeAlone(`cannot build the index on ${X.indexName(fields)} of ${type}`, (db) => this.chunk(db, type, fields))))
      if (done._tag === "Left") throw done.left
      if (done.right) return
      // Let the writer's batches in between two chunks.
      await Effect.runPromise(longWork.pass)
    }
  }

  /** One chunk, while no other write is in flight; answers whether the index is ready. */
  private async chunk(db: Db, type: string, fields: ReadonlyArray<string>): Promise<boolean> {
    const { registry } = this.access
    let state: IndexState | undefined = registry.get(type, fields)
    if (state?.state === "ready") return true
    if (state === undefined) {
      const prefix = X.indexPrefix(type, fields)
      await db.clear({ gte: prefix, lt: X.prefixEnd(prefix) })
      state = { type, fields, state: "building", after: 0, schema: this.access.schemaOf(type) }
    }
    const entries: Array<[string, string]> = []
    await readBatches(db.iterator({ gt: K.rowKey(type, String(state.after)), lt: `${K.ROWS_START}${type}!~`, limit: BACKFILL_CHUNK }), (more) => {
      entries.push(...more)
      return entries.length >= BACKFILL_CHUNK ? true : undefined
    }, { size: () => Math.min(READ_BATCH, BACKFILL_CHUNK - entries.length), closeQuietly: true })
    const batch = db.batch()
    for (const [key, raw] of entries) batch.put(X.indexKey(type, fields, this.access.decode(type, key, raw, fields)), "")
    const last = entries[entries.length - 1]
    const next: IndexState = {
      ...state,
      after: last === undefined ? state.after : K.idOfRowKey(last[0]),
      state: entries.length < BACKFILL_CHUNK ? "ready" : "building"
    }
    batch.put(X.indexMetaKey(type, fields), encodeIndexState(next))
    await batch.write()
    // Still inside the hold: the next batch of the writer maintains the index.
    registry.set(next)
    this.chunks++
    return next.state === "ready"
  }
}
