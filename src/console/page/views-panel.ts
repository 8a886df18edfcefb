/**
 * The views card: each declared view, what it folds and where it is served, and its current value. The values
 * are the server's (a view is user code run by the writer), re-read from `GET /api/_views` after events arrive,
 * at most a few times a second; a value that changed is highlighted. A view being folded again in the background
 * shows that, and why, and is re-read every second until it is served: it may go live with no event to announce it.
 * A view whose declaration changed shows its older value meanwhile, frozen, with the seq it is exact at; if the new
 * declaration's fold failed, it says so and why (the older value stays served until a restart). A keyed view (one
 * entry per key) shows its first entries, re-read the same way, and a lookup of one entry by its key: never the
 * whole view.
 */
import type { CatalogView, EntryPage, EntryValue, ViewInfo, ViewsSnapshot, ViewValue } from "../wire.ts"
import { getJson } from "./api.ts"
import { fill, h } from "./dom.ts"

const REFRESH_MS = 250
/** How often a view being folded again is re-read (the server's Retry-After). */
const REFOLDING_MS = 1000

const folds = (view: ViewInfo) =>
  Object.entries(view.on).map(([type, names]) => `${type}: ${names.join(", ")}`).join("; ")

const show = (value: ViewValue) =>
  "failed" in value ? value.failed : "refolding" in value ? `refolding: ${value.refolding}` : "value" in value ? JSON.stringify(value.value, null, 2) : ""

/** Entries shown per keyed view: its first page. */
const FIRST_ENTRIES = 10

/** A page of entries, one line each: `key  value`. */
const showEntries = (page: EntryPage) =>
  page.items.length === 0
    ? "(no entries)"
    : page.items.map((e) => `${e.key}  ${JSON.stringify(e.value)}`).join("\n") + (page.nextCursor === undefined ? "" : "\n…")

/** One keyed view's lookup by key: a form, and the entry it found (or why not). */
const lookup = (view: ViewInfo) => {
  const input = h("input", { type: "text", class: "view-key", "data-view": view.name, placeholder: "key", "aria-label": `key of ${view.name}` })
  const found = h("pre", { class: "view-entry", "data-view": view.name })
  const form = h("form", { class: "view-lookup" }, input, h("button", { type: "submit", class: "ghost small" }, "Look up"))
  form.addEventListener("submit", (e) => {
    e.preventDefault()
    const key = input.value
    if (key === "") return
    getJson<EntryValue>(`/api/_views/${view.name}/${encodeURIComponent(key)}`).then(
      (entry) => void (found.textContent = JSON.stringify(entry.value, null, 2)),
      () => void (found.textContent = `no entry under the key ${JSON.stringify(key)}`)
    )
  })
  return [form, found]
}

/** Why the value shown is an older declaration's, or undefined when it is the current one's. */
const staleNote = (value: ViewValue) => {
  const stale = "value" in value ? value.stale : undefined
  if (stale === undefined) return undefined
  return stale.nextFailed !== undefined
    ? `new version ${stale.nextVersion} failed: ${stale.nextFailed}; showing version ${stale.version}, frozen at seq ${stale.exactAt}, until a restart`
    : `version ${stale.nextVersion} is being folded; showing version ${stale.version}, frozen at seq ${stale.exactAt}, until it has caught up`
}

/** Still waiting for a fold: re-read without an event (going live may have none). */
const waiting = (value: ViewValue) => "refolding" in value || ("value" in value && value.stale !== undefined && value.stale.nextFailed === undefined)

export class ViewsPanel {
  private readonly values = new Map<string, HTMLElement>()
  private readonly seqs = new Map<string, HTMLElement>()
  private readonly notes = new Map<string, HTMLElement>()
  private timer: ReturnType<typeof setTimeout> | undefined

  constructor(catalog: CatalogView) {
    if (catalog.views.length === 0) {
      fill("views", h("p", { class: "none" }, "This app declares no views: add one with view({ schema, initial, on, evolve })."))
      return
    }
    fill("views", h("div", { class: "views" }, catalog.views.map((view) => {
      const value = h("pre", { class: "view-value", "data-view": view.name }, "…")
      const seq = h("span", { class: "view-seq muted" })
      const note = h("p", { class: "view-stale", "data-view-stale": view.name, hidden: "" })
      this.values.set(view.name, value)
      this.seqs.set(view.name, seq)
      this.notes.set(view.name, note)
      return h("div", { class: "view" },
        h("div", { class: "type-head" }, h("span", { class: "type-name" }, view.name), seq),
        view.description ? h("p", { class: "muted" }, view.description) : null,
        h("div", { class: "view-where" },
          h("span", { class: "muted" }, "folds "), h("code", {}, folds(view)),
          h("span", { class: "muted" }, " · "), h("code", {}, view.rest),
          h("span", { class: "muted" }, " · "), h("code", { class: "uri" }, view.resource),
          h("span", { class: "muted" }, " · "), h("code", { class: "tool" }, view.tool)),
        note,
        value,
        view.keyed ? lookup(view) : null)
    })))
    void this.refresh()
  }

  /** Something was committed: re-read the values soon (one read for a burst of events). */
  changed(delayMs = REFRESH_MS) {
    if (this.values.size === 0 || this.timer !== undefined) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      void this.refresh()
    }, delayMs)
  }

  private async refresh() {
    try {
      const { views } = await getJson<ViewsSnapshot>("/api/_views")
      if (views.some(waiting)) this.changed(REFOLDING_MS)
      for (const view of views) {
        const el = this.values.get(view.name)
        if (el === undefined) continue
        const text = "entries" in view ? showEntries(await getJson<EntryPage>(`${view.entries}?limit=${FIRST_ENTRIES}`)) : show(view)
        const refolding = "refolding" in view
        el.classList.toggle("failed", "failed" in view)
        el.classList.toggle("refolding", refolding)
        const note = staleNote(view)
        const noteEl = this.notes.get(view.name)!
        noteEl.hidden = note === undefined
        noteEl.textContent = note ?? ""
        noteEl.classList.toggle("failed", note !== undefined && "value" in view && view.stale?.nextFailed !== undefined)
        this.seqs.get(view.name)!.textContent = refolding ? "refolding" : "keyed" in view ? "keyed: its first entries" : view.seq > 0 ? `last changed at seq ${view.seq}` : "initial value"
        if (el.textContent === text) continue
        const first = el.textContent === "…"
        el.textContent = text
        if (!first) {
          el.classList.remove("flash")
          void el.offsetWidth // reflow, so re-adding the class restarts the animation
          el.classList.add("flash")
        }
      }
    } catch {
      // Shown as it was until the next event; the status pill reports the connection itself.
    }
  }
}
