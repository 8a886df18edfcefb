/** Response bodies shared by REST and MCP, so both carry the same bytes (C9). */
import type { Page } from "../projections/queries.ts"

/** `{"items":[...],"nextCursor":"..."}`, serialised once per row. */
export const listBody = (page: Page) =>
  `{"items":[${page.items.map((r) => JSON.stringify(r)).join(",")}]${page.nextCursor ? `,"nextCursor":${JSON.stringify(page.nextCursor)}` : ""}}`
