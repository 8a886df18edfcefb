/**
 * Startup of the keyed views: one record per view (`v!<name>`: the definition whose entries serve), and no entry.
 * A view whose record is missing, corrupt, failed or of another declaration is folded from the log in the
 * background (keyed-live.ts `refold`), over an empty log served at once. On a PostgreSQL log the entries are the
 * last snapshot's (`recoverFromSnapshots`): only the events after it are folded; entries kept in memory (a shared log
 * that stores none) are folded from the log at every start.
 */
import { Effect, Either } from "effect"
import type { EventLogShape } from "../../log/event-log.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import { parseKeyedViewRecord } from "../../log/view-entry-record.ts"
import { viewDefinition } from "../../log/view-record.ts"
import type { ViewEntryStore } from "../../log/event-log.ts"
import type { CompiledView } from "../../domain/compile-views.ts"
import { entryWrites, makeKeyedFolder } from "./keyed-fold.ts"
import { keysOf, makeKeyedViews, type KeyedState } from "./keyed-live.ts"
import type { KeyedSnapshots, KeyedStore } from "./keyed-store.ts"

/** Why a keyed view's stored record cannot serve (then it is folded from the log), or undefined when it can. */
const unusable = (found: { readonly record: unknown; readonly corrupt?: string } | undefined, definition: string, durable: boolean) => {
  if (!durable) return "its entries are kept in memory"
  if (found === undefined) return "it has no stored entries"
  if (found.corrupt !== undefined) return `its record is corrupt (${found.corrupt})`
  const parsed = parseKeyedViewRecord(found.record)
  if (Either.isLeft(parsed)) return "its stored record is not a keyed view's (it was declared without a key)"
  if (parsed.right.definition !== definition) return "its declaration changed since its entries were stored"
  if (parsed.right.failed !== undefined) return `it had failed (${parsed.right.failed})`
  return undefined
}

/**
 * The definition of the former declaration whose entries a PostgreSQL node serves while a changed one is folded: the
 * record names another declaration that had not failed, and its entries were stored at a seq `at` within the log.
 */
const formerGeneration = (found: { readonly record: unknown; readonly corrupt?: string } | undefined, definition: string, at: number, head: number) => {
  if (found === undefined || found.corrupt !== undefined || at <= 0 || at > head) return undefined
  const record = Either.getOrUndefined(parseKeyedViewRecord(found.record))
  return record === undefined || record.definition === definition || record.failed !== undefined ? undefined : record.definition
}

export const recoverKeyedViews = (log: EventLogShape, catalog: CompiledApp, store: KeyedStore) =>
  Effect.gen(function* () {
    const started = Date.now()
    const views = [...catalog.views.values()].filter((v) => v.keyed)
    if (views.length === 0) return makeKeyedViews([], store, { loaded: 0, rebuilt: [], tailEvents: 0, millis: 0 }, 0, log, catalog)
    if (store.snapshots !== undefined && log.viewEntries !== undefined) return yield* recoverFromSnapshots(log, catalog, store, store.snapshots, log.viewEntries, views, started)
    const head = yield* log.head
    const stored = new Map((store.durable && log.storedViews !== undefined ? yield* log.storedViews : []).map((v) => [v.name, v]))
    const states: Array<KeyedState> = []
    const rebuilt: Array<string> = []
    for (const view of views) {
      const definition = viewDefinition(view)
      const found = stored.get(view.name)
      const record = found === undefined || found.corrupt !== undefined ? undefined : Either.getOrUndefined(parseKeyedViewRecord(found.record))
      const replaces = record !== undefined && record.definition !== definition ? [record.definition] : []
      // Blue/green: another declaration's entries that served until it stopped serve, marked stale, until this one does.
      const former = store.durable && record !== undefined && record.definition !== definition && record.failed === undefined ? record.definition : undefined
      const why = unusable(found, definition, store.durable)
      if (why === undefined) {
        states.push({ view, definition, failed: undefined, refolding: undefined, dirty: false, ready: undefined, replaces, former: undefined })
        continue
      }
      rebuilt.push(view.name)
      if (head.lastSeq === 0) {
        // Nothing to fold: served at once, its record stored with the first batch.
        states.push({ view, definition, failed: undefined, refolding: undefined, dirty: true, ready: undefined, replaces, former: undefined })
        continue
      }
      // The former's entries were written with every batch up to this start: exact at the head.
      states.push({ view, definition, failed: undefined, refolding: why, dirty: false, ready: undefined, replaces, former, ...(former === undefined ? {} : { formerAt: head.lastSeq }) })
      yield* Effect.logInfo(`keyed view ${view.name}: folding it from the log in the background: ${why}`)
    }
    return makeKeyedViews(states, store, { loaded: views.length - rebuilt.length, rebuilt, tailEvents: 0, millis: Date.now() - started }, head.lastSeq, log, catalog)
  })

/**
 * A PostgreSQL node's start: a view whose record (its `views` row) names this declaration and has not failed serves
 * the table's entries, exact at the record's seq `at` (the last snapshot any node stored), with the events after it
 * folded on top here (into memory: they are stored with the next snapshot). Any other view is folded from the whole
 * log in the background, as on the embedded store, its former declaration's entries serving meanwhile if there are any.
 */
const recoverFromSnapshots = (
  log: EventLogShape,
  catalog: CompiledApp,
  store: KeyedStore,
  snapshots: KeyedSnapshots,
  entries: ViewEntryStore,
  views: ReadonlyArray<CompiledView>,
  started: number
) =>
  Effect.gen(function* () {
    const head = yield* log.head
    const stored = new Map((log.storedViews === undefined ? [] : yield* log.storedViews).map((v) => [v.name, v]))
    const watermarks = yield* entries.watermarks
    const states: Array<KeyedState> = []
    const rebuilt: Array<string> = []
    // The views served from their entries, grouped by the seq they are exact at (one snapshot writes all at one seq).
    const tails = new Map<number, Array<KeyedState>>()
    for (const view of views) {
      const definition = viewDefinition(view)
      const found = stored.get(view.name)
      const at = watermarks.get(view.name) ?? 0
      const why = unusable(found, definition, true) ?? (at > head.lastSeq ? `its entries were stored at seq ${at}, past the log's head ${head.lastSeq}` : undefined)
      if (why === undefined) {
        snapshots.begin(view.name, definition, at)
        const state: KeyedState = { view, definition, failed: undefined, refolding: undefined, dirty: false, ready: undefined, replaces: [], former: undefined }
        states.push(state)
        if (at < head.lastSeq) tails.set(at, [...(tails.get(at) ?? []), state])
        continue
      }
      snapshots.begin(view.name, definition, 0)
      rebuilt.push(view.name)
      // Blue/green, as on the embedded store: the former declaration's entries in the table, frozen at the seq of its
      // last snapshot, serve (marked stale) while this one is folded, and after its fold failed.
      const former = head.lastSeq === 0 ? undefined : formerGeneration(found, definition, at, head.lastSeq)
      if (former !== undefined) snapshots.begin(view.name, former, at)
      states.push({
        view,
        definition,
        failed: undefined,
        refolding: head.lastSeq === 0 ? undefined : why,
        dirty: false,
        ready: undefined,
        // Once this one serves, the node forgets the former's entries (the table keeps them: another node may serve them).
        replaces: former === undefined ? [] : [former],
        former,
        ...(former === undefined ? {} : { formerAt: at })
      })
      if (head.lastSeq > 0) yield* Effect.logInfo(`keyed view ${view.name}: folding it from the log in the background: ${why}`)
    }
    let tailEvents = 0
    for (const [at, folded] of tails) {
      const byName = new Map(folded.map((s) => [s.view.name, s]))
      const folder = makeKeyedFolder(log, catalog, folded.map((s) => s.view), {
        read: (view, key) => store.read(view.name, byName.get(view.name)!.definition, key),
        put: (view, changed) => store.write(entryWrites(view.name, byName.get(view.name)!.definition, changed)),
        before: (view, changes) => snapshots.readAhead(view.name, byName.get(view.name)!.definition, keysOf(view, changes))
      }, at)
      yield* folder.readTo(head.lastSeq)
      tailEvents += folder.read()
      yield* Effect.logInfo(`keyed views ${folded.map((s) => s.view.name).join(", ")}: served from their entries stored at seq ${at}; ${folder.read()} events after it folded`)
      for (const [name, f] of folder.failures()) {
        byName.get(name)!.failed = f.reason
        yield* Effect.logError(`${f.reason} (while folding the tail of its stored entries at startup)`)
      }
    }
    const projection = makeKeyedViews(states, store, { loaded: views.length - rebuilt.length, rebuilt, tailEvents, millis: Date.now() - started }, head.lastSeq, log, catalog)
    // The tail folded here is stored at once: the next start folds only what comes after it.
    if (tailEvents > 0 && projection.snapshot !== undefined) {
      yield* Effect.catchAll(projection.snapshot(head.lastSeq), (e) =>
        Effect.logWarning(`keyed views: cannot store their entries at seq ${head.lastSeq} (${e.reason}); the next start folds the tail again`))
    }
    return projection
  })
