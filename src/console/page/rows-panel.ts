/** The rows card: one table per type, updated in place as events are folded in, with the change highlighted. */
import type { CatalogView } from "../wire.ts"
import { fill, h } from "./dom.ts"
import { showCell } from "./format.ts"
import type { Applied, Projection, Row } from "./projection.ts"

interface TypeTable {
  readonly columns: ReadonlyArray<string>
  readonly body: HTMLTableSectionElement
  readonly count: HTMLElement
  readonly trs: Map<string, HTMLTableRowElement>
}

export class RowsPanel {
  private readonly tables = new Map<string, TypeTable>()

  constructor(catalog: CatalogView, private readonly projection: Projection) {
    const blocks = catalog.types.map((type) => {
      const columns = ["id", "version", ...type.fields.map((f) => f.name)]
      const body = h("tbody")
      const count = h("span", { class: "muted" })
      const table: TypeTable = { columns, body, count, trs: new Map() }
      this.tables.set(type.name, table)
      for (const row of projection.type(type.name)?.rows.values() ?? []) this.insert(table, row)
      this.recount(type.name)
      return h("div", { class: "type" },
        h("div", { class: "type-head" }, h("span", { class: "type-name" }, type.name), count),
        h("div", { class: "scroll" },
          h("table", { class: "rows", "data-type": type.name },
            h("thead", {}, h("tr", {}, columns.map((c) => h("th", {}, c)))),
            body)))
    })
    fill("rows", blocks)
  }

  /** Shows what one folded event did. */
  show(type: string, id: string, applied: Applied) {
    const table = this.tables.get(type)
    if (table === undefined) return
    const tr = table.trs.get(id)
    if (applied.after === undefined) {
      // Deleted, or a row the page does not hold (past a capped snapshot).
      tr?.remove()
      table.trs.delete(id)
    } else if (tr === undefined) {
      flash(this.insert(table, applied.after), [])
    } else {
      const changed: Array<HTMLTableCellElement> = []
      table.columns.forEach((column, i) => {
        const cell = tr.cells[i]
        const text = showCell(applied.after![column])
        if (cell.textContent !== text) {
          cell.textContent = text
          changed.push(cell)
        }
      })
      flash(tr, changed)
    }
    this.recount(type)
  }

  private insert(table: TypeTable, row: Row) {
    const tr = h("tr", { "data-id": row.id }, table.columns.map((c) => h("td", { "data-column": c }, showCell(row[c]))))
    table.trs.set(row.id, tr)
    table.body.append(tr) // ids only grow, so a new row sorts last
    return tr
  }

  private recount(type: string) {
    const table = this.tables.get(type)!
    const state = this.projection.type(type)
    const total = state?.total ?? 0
    const shown = table.trs.size
    table.count.textContent = shown < total ? `first ${shown} of ${total} rows` : `${total} ${total === 1 ? "row" : "rows"}`
    if (total === 0 && table.body.childElementCount === 0) {
      table.body.append(h("tr", { class: "empty" }, h("td", { colspan: String(table.columns.length) }, "no rows yet")))
    } else {
      table.body.querySelector("tr.empty")?.remove()
    }
  }
}

/** Restarts the highlight animation on the row and on the cells that changed; each class goes when it ends. */
const flash = (tr: HTMLElement, cells: ReadonlyArray<HTMLElement>) => {
  for (const el of [tr, ...cells]) {
    const cls = el === tr ? "flash" : "changed"
    el.classList.remove(cls)
    void el.offsetWidth // reflow, so re-adding the class restarts the animation
    el.classList.add(cls)
    // The row's cells' animations bubble up to it; a cell's own is its only one.
    el.addEventListener("animationend", () => el.classList.remove(cls), { once: true })
  }
}
