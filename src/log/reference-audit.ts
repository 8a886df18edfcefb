/**
 * `wo verify --app`'s check of references, on either store: every live row's `ref` fields name a live row of their
 * type (the app declares which fields are references; the store does not know). The stores' checks feed it each
 * live row after reading the log, which says which entities are live (store-rules.ts `versionOf`).
 */
import type { Row } from "../domain/catalog.ts"
import type { CompiledApp } from "../domain/compile.ts"
import { streamKey } from "../domain/events.ts"

/** Per type, its reference fields: field -> referenced type. */
export type ReferenceFields = ReadonlyMap<string, ReadonlyMap<string, string>>

/** The app's reference fields, by type (types without any are left out). */
export const referenceFieldsOf = (app: CompiledApp): ReferenceFields => {
  const fields = new Map<string, ReadonlyMap<string, string>>()
  for (const [name, type] of app.types) if (type.rules.refs.size > 0) fields.set(name, type.rules.refs)
  return fields
}

/** Longer ids are cut in a problem's text, as error texts are. */
const quoted = (value: unknown) => {
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? String(value)
  return text.length > 40 ? `${text.slice(0, 40)}…` : text
}

/**
 * The check: `row(type, row)` for each live row names every reference of it to a row that is not live
 * (`versionOf`: the entity's last version in the log, -1 after its delete, undefined with no event).
 */
export const makeReferenceAudit = (
  fields: ReferenceFields,
  versionOf: (entity: string) => number | undefined,
  problem: (text: string) => void
) => ({
  row: (type: string, row: Row) => {
    const refs = fields.get(type)
    if (refs === undefined) return
    for (const [field, target] of refs) {
      const value = row[field]
      if (value === undefined || value === null) continue
      // A row may reference itself.
      if (target === type && value === row.id) continue
      const version = typeof value === "string" ? versionOf(streamKey(target, value)) : undefined
      if (version === undefined || version === -1) {
        problem(`dangling reference: ${type} ${row.id} field ${field} references ${target} ${quoted(value)}, which ${version === -1 ? "was deleted" : "does not exist"}`)
      }
    }
  }
})
