/**
 * `wo replay --app` and `wo verify --app` for keyed views: each keyed view folded from the log alone (in memory:
 * a tool's run, not the server's) and compared, key by key, with the entries stored under the definition its
 * record names. Every difference names its key: an entry that differs (`stored …, the log's fold …`), one the fold
 * has and the store lacks (missing), one the store has and the fold does not (extra). Never writes.
 */
import { Effect, Either, Stream } from "effect"
import type { EventLogShape } from "../../log/event-log.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import type { CompiledView } from "../../domain/compile-views.ts"
import { parseKeyedViewRecord, parseViewEntry, type StoredEntry } from "../../log/view-entry-record.ts"
import { viewDefinition } from "../../log/view-record.ts"
import { makeKeyedFolder } from "./keyed-fold.ts"

/** The most differing keys a comparison names one by one; the rest are counted. */
export const MAX_KEYS_SHOWN = 20

export interface KeyedComparison {
  readonly name: string
  readonly outcome: "match" | "mismatch" | "stale"
  readonly detail: string
  /** Each differing key: `key 12: stored …, the log's fold …` (at most MAX_KEYS_SHOWN). */
  readonly keys: ReadonlyArray<string>
}

/** JSON with sorted keys, so that key order does not count as a difference. */
const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(",")}}`
  }
  return JSON.stringify(value)
}

const canonicalText = (json: string) => {
  try {
    return canonical(JSON.parse(json))
  } catch {
    return json
  }
}

/** Each keyed view folded from the log into memory (up to `upTo`; default: the head): its entries by key, or why it failed. */
const foldInMemory = (log: EventLogShape, catalog: CompiledApp, views: ReadonlyArray<CompiledView>, upTo?: number) =>
  Effect.gen(function* () {
    const entries = new Map(views.map((v) => [v.name, new Map<string, StoredEntry>()]))
    const folder = makeKeyedFolder(log, catalog, views, {
      read: (view, key) => entries.get(view.name)!.get(key),
      put: (view, changed) =>
        Effect.sync(() => {
          const map = entries.get(view.name)!
          for (const e of changed) {
            const entry = e.text === undefined ? undefined : parseViewEntry(e.text)
            if (entry === undefined) map.delete(e.key)
            else map.set(e.key, entry)
          }
        })
    })
    yield* folder.readTo(upTo)
    return { entries, failures: folder.failures() }
  })

/**
 * On a log whose entries are snapshots (PostgreSQL), each view's entries are exact at its snapshot seq: the views
 * are folded up to it, one fold per seq (one snapshot stores every view at one seq).
 */
const foldToSnapshots = (log: EventLogShape, catalog: CompiledApp, views: ReadonlyArray<CompiledView>, marks: ReadonlyMap<string, number>) =>
  Effect.gen(function* () {
    const entries = new Map<string, Map<string, StoredEntry>>()
    const failures = new Map<string, { readonly reason: string }>()
    const bySeq = new Map<number, Array<CompiledView>>()
    for (const v of views) bySeq.set(marks.get(v.name) ?? 0, [...(bySeq.get(marks.get(v.name) ?? 0) ?? []), v])
    for (const [at, group] of bySeq) {
      const folded = yield* foldInMemory(log, catalog, group, at)
      for (const [name, map] of folded.entries) entries.set(name, map)
      for (const [name, f] of folded.failures) failures.set(name, f)
    }
    return { entries, failures }
  })

export const compareKeyedViews = (log: EventLogShape, catalog: CompiledApp) =>
  Effect.gen(function* () {
    const views = [...catalog.views.values()].filter((v) => v.keyed)
    if (views.length === 0 || log.storedViews === undefined || log.storedViewEntries === undefined) return []
    const readEntries = log.storedViewEntries
    const stored = new Map((yield* log.storedViews).map((v) => [v.name, v]))
    const folded = log.viewEntries === undefined
      ? yield* foldInMemory(log, catalog, views)
      : yield* foldToSnapshots(log, catalog, views, yield* log.viewEntries.watermarks)
    const out: Array<KeyedComparison> = []
    for (const view of views) {
      const name = view.name
      const definition = viewDefinition(view)
      const failed = folded.failures.get(name)
      const entries = folded.entries.get(name)!
      const found = stored.get(name)
      const record = found === undefined || found.corrupt !== undefined ? undefined : Either.getOrUndefined(parseKeyedViewRecord(found.record))
      if (found?.corrupt !== undefined) {
        out.push({ name, outcome: "mismatch", detail: `its record is corrupt: ${found.corrupt}`, keys: [] })
        continue
      }
      if (found !== undefined && record === undefined) {
        out.push({ name, outcome: "stale", detail: "stored as a whole view by another declaration; the next start folds it from the log", keys: [] })
        continue
      }
      if (record === undefined) {
        // Never stored: declared after these events were written, and no server has run since (it folds the view
        // from the log in the background). Entries stored without their record are damage.
        const orphans = yield* Stream.runCount(Stream.take(readEntries(name, definition), 1))
        out.push(orphans > 0
          ? { name, outcome: "mismatch", detail: "entries are stored, but not the view's record", keys: [] }
          : entries.size === 0 && failed === undefined
          ? { name, outcome: "match", detail: "not stored yet; the log's fold holds no entry", keys: [] }
          : { name, outcome: "stale", detail: `not stored yet (declared after these events); the next start folds it from the log (${failed === undefined ? `${entries.size} entries` : `it fails: ${failed.reason}`})`, keys: [] })
        continue
      }
      if (record.definition !== definition) {
        out.push({ name, outcome: "stale", detail: "stored by another declaration of the view; the next start folds it again from the log", keys: [] })
        continue
      }
      if (record.failed !== undefined || failed !== undefined) {
        out.push(record.failed !== undefined && failed !== undefined
          ? { name, outcome: "match", detail: `failed: ${record.failed}`, keys: [] }
          : { name, outcome: "mismatch", detail: `stored ${record.failed === undefined ? "served" : `failed: ${record.failed}`}, the log's fold ${failed === undefined ? "served" : `failed: ${failed.reason}`}`, keys: [] })
        continue
      }
      const keys: Array<string> = []
      let differing = 0
      let compared = 0
      const note = (line: string) => {
        differing++
        if (keys.length < MAX_KEYS_SHOWN) keys.push(line)
      }
      yield* Stream.runForEach(readEntries(name, definition), ({ key, text }) =>
        Effect.sync(() => {
          compared++
          const entry = parseViewEntry(text)
          const fold = entries.get(key)
          entries.delete(key)
          if (entry === undefined) return note(`key ${key}: the stored record is not an entry`)
          if (fold === undefined) return note(`key ${key}: stored ${canonicalText(entry.json)}, the log's fold has no entry (extra)`)
          const storedText = canonicalText(entry.json)
          const foldText = canonicalText(fold.json)
          if (storedText !== foldText) note(`key ${key}: stored ${storedText}, the log's fold ${foldText}`)
        }))
      for (const [key, fold] of entries) note(`key ${key}: not stored, the log's fold ${canonicalText(fold.json)} (missing)`)
      out.push(differing === 0
        ? { name, outcome: "match", detail: `${compared} entries equal the log's fold`, keys: [] }
        : { name, outcome: "mismatch", detail: `${differing} of its entries differ from the log's fold${differing > keys.length ? ` (the first ${keys.length} named)` : ""}`, keys })
    }
    return out
  })
