/** Response bodies shared by REST and MCP, so both carry the same bytes. */
import type { Page } from "../../projections/queries.ts"
import type { ViewSnapshot } from "../../projections/views/views.ts"
import type { KeyedEntry, KeyedPage } from "../../projections/views/keyed-views.ts"

/**
 * `{"items":[...],"nextCursor":"..."}`, serialised once per row; `,"partial":true` after the cursor on a page that
 * read only part of the rows (queries.ts), so that a client knows to follow the cursor even when `items` is empty.
 */
export const listBody = (page: Page) =>
  `{"items":[${page.items.map((r) => JSON.stringify(r)).join(",")}]${page.nextCursor ? `,"nextCursor":${JSON.stringify(page.nextCursor)}` : ""}${page.partial ? `,"partial":true` : ""}}`

/** `{"name":"...","seq":<last change>,"value":...}`: a view's value, as REST, the resource and the tool serve it. */
export const viewBody = (view: ViewSnapshot) =>
  `{"name":${JSON.stringify(view.name)},"seq":${view.seq},"value":${view.valueJson ?? "null"}}`

/** `{"name","key","seq","value"}`: one entry of a keyed view, as REST, the resource and the tool serve it. */
export const entryBody = (name: string, entry: KeyedEntry) =>
  `{"name":${JSON.stringify(name)},"key":${JSON.stringify(entry.key)},"seq":${entry.seq},"value":${entry.json}}`

/** `{"name","items":[{"key","seq","value"}...],"nextCursor"}`: a page of a keyed view's entries, key order unless asked otherwise. */
export const entryPageBody = (name: string, page: KeyedPage) =>
  `{"name":${JSON.stringify(name)},"items":[${page.items.map((e) => `{"key":${JSON.stringify(e.key)},"seq":${e.seq},"value":${e.json}}`).join(",")}]` +
  `${page.next === undefined ? "" : `,"nextCursor":${JSON.stringify(page.next)}`}}`

/** `{"id","version","deleted":true}`: what a delete answers, at the row's final version (REST body, tool result). */
export const deletedBody = (event: { readonly id: string; readonly version: number }) => ({ id: event.id, version: event.version, deleted: true })
