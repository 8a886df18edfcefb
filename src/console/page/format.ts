/** How values, times and changes read in the console. Pure functions, no DOM. */
import type { StoredEvent } from "../wire.ts"

const MAX_VALUE = 48

/** Strings quoted, anything structured as JSON, long values cut short. */
export const showValue = (value: unknown): string => {
  const text = value === undefined ? "—" : JSON.stringify(value)
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE - 1)}…` : text
}

/** A table cell: strings without quotes (the column says what it is), the rest as in `showValue`. */
export const showCell = (value: unknown): string => (typeof value === "string" ? value : showValue(value))

/** Local wall-clock time with milliseconds: events often land within one second. */
export const showTime = (epochMs: number): string => {
  const d = new Date(epochMs)
  const pad = (n: number, w = 2) => String(n).padStart(w, "0")
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`
}

/**
 * Who made an event, in a few words: the principal (and whom it acts for), else the client ("rest", "in-process",
 * an MCP client's name and version); an event written before actors were recorded shows none.
 */
export const showActor = (actor: StoredEvent["actor"]): string => {
  if (actor === undefined) return ""
  const client = typeof actor.client === "string" ? actor.client : `${actor.client.name}${actor.client.version === undefined ? "" : ` ${actor.client.version}`}`
  if (actor.principal === undefined) return client
  return actor.onBehalfOf === undefined ? actor.principal : `${actor.principal} for ${actor.onBehalfOf}`
}

/** The whole actor, for a tooltip: every part it has, the legacy session too. */
export const describeActor = (actor: StoredEvent["actor"]): string => {
  if (actor === undefined) return "written before actors were recorded"
  const c = actor.client
  const client = typeof c === "string" ? c : `MCP ${c.name}${c.version === undefined ? "" : ` ${c.version}`}${c.session === undefined ? "" : ` (session ${c.session})`}`
  return [actor.principal === undefined ? undefined : `principal ${actor.principal}`, actor.onBehalfOf === undefined ? undefined : `on behalf of ${actor.onBehalfOf}`, `client ${client}`]
    .filter((part) => part !== undefined).join(", ")
}

export interface FieldChange {
  readonly field: string
  /** Absent when the earlier value is unknown (the event predates what the page has seen) or for a create. */
  readonly from?: unknown
  readonly to: unknown
}

/** What an event changed. `before` is the row just before it, when the page knows it. */
export const changesOf = (event: StoredEvent, before: Readonly<Record<string, unknown>> | undefined): ReadonlyArray<FieldChange> => {
  if (event.kind === "deleted") return []
  return Object.entries(event.data)
    .filter(([field, to]) => event.kind === "created" || before === undefined || JSON.stringify(before[field]) !== JSON.stringify(to))
    .map(([field, to]) =>
      event.kind !== "created" && before !== undefined && field in before ? { field, from: before[field], to } : { field, to })
}

/** One line: `price 19.99 → 14.5`, `name="Lamp" price=10`, `deleted`. */
export const showChanges = (event: StoredEvent, changes: ReadonlyArray<FieldChange>): string => {
  if (event.kind === "deleted") return "deleted"
  if (changes.length === 0) return "no field changed"
  return changes
    .map((c) => ("from" in c ? `${c.field} ${showValue(c.from)} → ${showValue(c.to)}` : event.kind === "created" ? `${c.field}=${showValue(c.to)}` : `${c.field} → ${showValue(c.to)}`))
    .join("  ")
}
