/** Response bodies shared by REST and MCP, so both carry the same bytes. */
import type { Page } from "../../projections/queries.ts"
import type { ViewSnapshot } from "../../projections/views/views.ts"

/**
 * `{"items":[...],"nextCursor":"..."}`, serialised once per row; `,"partial":true` after the cursor on a page that
 * read only part of the rows (queries.ts), so that a client knows to follow the cursor even when `items` is empty.
 */
export const listBody = (page: Page) =>
  `{"items":[${page.items.map((r) => JSON.stringify(r)).join(",")}]${page.nextCursor ? `,"nextCursor":${JSON.stringify(page.nextCursor)}` : ""}${page.partial ? `,"partial":true` : ""}}`

/** `{"name":"...","seq":<last change>,"value":...}`: a view's value, as REST, the resource and the tool serve it. */
export const viewBody = (view: ViewSnapshot) =>
  `{"name":${JSON.stringify(view.name)},"seq":${view.seq},"value":${view.valueJson ?? "null"}}`

/** `{"id","version","deleted":true}`: what a delete answers, at the row's final version (REST body, tool result). */
export const deletedBody = (event: { readonly id: string; readonly version: number }) => ({ id: event.id, version: event.version, deleted: true })
