/** The rows snapshot the console's tables start from; the page then folds `/api/_events` after its `seq`. */
import type { CompiledApp } from "../domain/compile.ts"
import type { RowsShape } from "../projections/rows/rows.ts"
import type { RowsSnapshot, TypeRows } from "./wire.ts"

/** Enough for a demo or a debugging look; a table of thousands of rows is not readable anyway. */
export const SNAPSHOT_ROWS = 200

/**
 * Every type's first rows and the checkpoint, read in one synchronous step: the projection is applied on the
 * same thread, so the rows are exactly the state at `seq`.
 */
export const rowsSnapshot = (catalog: CompiledApp, rows: RowsShape, limit = SNAPSHOT_ROWS): RowsSnapshot => {
  const types: Record<string, TypeRows> = {}
  for (const name of catalog.types.keys()) {
    const table = rows.table(name)
    const page = table.page(0, limit)
    types[name] = { total: table.size, more: page.more, items: page.rows }
  }
  return { seq: rows.checkpoint(), types }
}
