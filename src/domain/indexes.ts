/**
 * The secondary indexes a type declares (`indexes` on the entity): each a filterable field, or a pair
 * `[filter, order]` for lists filtered by the first and ordered by the second. The embedded store keeps them on
 * disk from the start (built in the background for existing rows); any other filter or order gets its index on
 * first use. A PostgreSQL node ignores them (it indexes in memory, on first use).
 */
import type { FilterableField } from "./filterable.ts"

/** The declared indexes as field lists; a field that lists cannot filter or order by is a problem, by name. */
export const compileIndexes = (
  type: string,
  declared: unknown,
  filterable: ReadonlyMap<string, FilterableField>,
  problems: Array<string>
): ReadonlyArray<ReadonlyArray<string>> => {
  if (declared === undefined) return []
  if (!Array.isArray(declared)) {
    problems.push(`type "${type}": indexes must be a list of field names (or [filter, order] pairs)`)
    return []
  }
  const out: Array<ReadonlyArray<string>> = []
  for (const entry of declared as ReadonlyArray<unknown>) {
    const fields: ReadonlyArray<unknown> = Array.isArray(entry) ? entry : [entry]
    const where = `type "${type}", index ${JSON.stringify(entry)}`
    if (fields.length < 1 || fields.length > 2) problems.push(`${where}: a field, or a pair [filter, order]`)
    else if (fields.some((f) => typeof f !== "string" || !filterable.has(f))) problems.push(`${where}: lists can only filter and order by scalar and literal fields`)
    else out.push(fields as ReadonlyArray<string>)
  }
  return out
}
