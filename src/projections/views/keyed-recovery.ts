/**
 * Startup of the keyed views: one record per view (`v!<name>`: the definition whose entries serve), and no entry.
 * A view whose record is missing, corrupt, failed or of another declaration is folded from the log in the
 * background (keyed-live.ts `refold`), over an empty log served at once. Entries kept in memory (a PostgreSQL log)
 * are folded from the log at every start.
 */
import { Effect, Either } from "effect"
import type { EventLogShape } from "../../log/event-log.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import { parseKeyedViewRecord } from "../../log/view-entry-record.ts"
import { viewDefinition } from "../../log/view-record.ts"
import { makeKeyedViews, type KeyedState } from "./keyed-live.ts"
import type { KeyedStore } from "./keyed-store.ts"

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

export const recoverKeyedViews = (log: EventLogShape, catalog: CompiledApp, store: KeyedStore) =>
  Effect.gen(function* () {
    const started = Date.now()
    const views = [...catalog.views.values()].filter((v) => v.keyed)
    if (views.length === 0) return makeKeyedViews([], store, { loaded: 0, rebuilt: [], millis: 0 }, 0, log, catalog)
    const head = yield* log.head
    const stored = new Map((store.durable && log.storedViews !== undefined ? yield* log.storedViews : []).map((v) => [v.name, v]))
    const states: Array<KeyedState> = []
    const rebuilt: Array<string> = []
    for (const view of views) {
      const definition = viewDefinition(view)
      const found = stored.get(view.name)
      const former = found === undefined ? undefined : Either.getOrUndefined(parseKeyedViewRecord(found.record))?.definition
      const replaces = former !== undefined && former !== definition ? [former] : []
      const why = unusable(found, definition, store.durable)
      if (why === undefined) {
        states.push({ view, definition, failed: undefined, refolding: undefined, dirty: false, ready: undefined, replaces })
        continue
      }
      rebuilt.push(view.name)
      if (head.lastSeq === 0) {
        // Nothing to fold: served at once, its record stored with the first batch.
        states.push({ view, definition, failed: undefined, refolding: undefined, dirty: true, ready: undefined, replaces })
        continue
      }
      states.push({ view, definition, failed: undefined, refolding: why, dirty: false, ready: undefined, replaces })
      yield* Effect.logInfo(`keyed view ${view.name}: folding it from the log in the background: ${why}`)
    }
    return makeKeyedViews(states, store, { loaded: views.length - rebuilt.length, rebuilt, millis: Date.now() - started }, head.lastSeq, log, catalog)
  })
