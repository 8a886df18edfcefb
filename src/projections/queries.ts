/**
 * Every read of rows, shared by REST, MCP tools and MCP resources (no second data path): one row, one page of
 * rows (filtered and ordered as the request says; see domain/list-request.ts) with an opaque cursor
 * (cursor.ts), or a plain walk in id order (what `resources/list` pages through). On a node whose rows are a cache
 * of PostgreSQL, a row it does not hold is awaited from the store, never read with the thread blocked.
 */
import { Context, Effect, Layer } from "effect"
import type { Row } from "../domain/catalog.ts"
import { NotFound, ValidationFailed, type StoreError } from "../domain/errors.ts"
import { streamKey } from "../domain/events.ts"
import { ID_ORDER, orderText, type ListRequest } from "../domain/list-request.ts"
import { WoConfig } from "../support/config.ts"
import { decodeCursor, encodeCursor } from "./cursor.ts"
import { NOT_HELD, type NotHeld } from "./rows/cache-table.ts"
import type { RowPage } from "./rows/row-table.ts"
import { Rows } from "./rows/rows.ts"

export { NOT_HELD, type NotHeld } from "./rows/cache-table.ts"

export interface Page {
  readonly items: ReadonlyArray<Row>
  /** Present when more rows follow. */
  readonly nextCursor?: string
  /**
   * Present (true) when the page holds fewer rows than its limit, maybe none, because it read only part of the rows
   * (a filter whose index is being built: store-table.ts); the rows after it are reached through `nextCursor`.
   */
  readonly partial?: true
}

/** A page request: `{cursor?, limit?}`, and optionally filters and an order. */
export type PageRequest = ListRequest

export interface QueriesShape {
  /** The row; a node whose rows are a cache of the store awaits the store for a row it does not hold. */
  readonly get: (type: string, id: string) => Effect.Effect<Row, NotFound | StoreError>
  /** The row, or undefined when there is none. */
  readonly read: (type: string, id: string) => Effect.Effect<Row | undefined, StoreError>
  /**
   * The same row now, or undefined (REST's GET without a fiber: rest.ts); throws a StoreError when it cannot be read.
   * NOT_HELD on a node whose rows are a cache of the store, for a row it does not hold: `get` it (never read here,
   * where reading would block the event loop on the store).
   */
  readonly row: (type: string, id: string) => Row | undefined | NotHeld
  /** The rows are a cache of the store (a node on PostgreSQL): `row` may answer NOT_HELD. */
  readonly cachesStore: boolean
  readonly list: (type: string, request: PageRequest) => Effect.Effect<Page, ValidationFailed>
  /** Up to `limit` rows of `type` whose ids follow `afterId`, in id order, and whether more follow. */
  readonly rowsAfter: (type: string, afterId: number, limit: number) => Effect.Effect<RowPage, StoreError>
}

export class Queries extends Context.Tag("writeonce/Queries")<Queries, QueriesShape>() {}

/** The reads over this node's rows, with the configured page sizes. */
export const makeQueries =
  Effect.gen(function* () {
    const rows = yield* Rows
    const { defaultPageSize, maxPageSize } = yield* WoConfig
    const invalid = (type: string, path: string, message: string) =>
      new ValidationFailed({ type, issues: [{ path: [path], message }] })
    const cached = rows.cached
    const read: QueriesShape["read"] = cached === undefined
      ? (type, id) => Effect.sync(() => rows.get(type, id))
      : (type, id) =>
          Effect.suspend(() => {
            const hit = cached.hit(type, id)
            if (hit !== NOT_HELD) return Effect.succeed(hit)
            return Effect.map(cached.fetch([{ type, id }]), (found) => found.get(streamKey(type, id)) ?? undefined)
          })
    return Queries.of({
      row: cached === undefined ? (type, id) => rows.get(type, id) : (type, id) => cached.hit(type, id),
      cachesStore: cached !== undefined,
      read,
      get: cached === undefined
        ? (type, id) =>
            Effect.suspend(() => {
              const row = rows.get(type, id)
              return row === undefined ? Effect.fail(new NotFound({ type, id })) : Effect.succeed(row)
            })
        : (type, id) => Effect.flatMap(read(type, id), (row) => (row === undefined ? Effect.fail(new NotFound({ type, id })) : Effect.succeed(row))),
      list: (type, { cursor, limit = defaultPageSize, where = [], order = ID_ORDER }) =>
        Effect.suspend(() => {
          if (!Number.isInteger(limit) || limit < 1 || limit > maxPageSize) {
            return Effect.fail(invalid(type, "limit", `must be an integer from 1 to ${maxPageSize}`))
          }
          // Ascending id keeps the cursors it always had; any other order is written into its cursors.
          const written = order.field === "id" && !order.descending ? undefined : orderText(order)
          let after
          if (cursor !== undefined) {
            after = decodeCursor(type, cursor, written, order.holds)
            if (after === undefined) {
              return Effect.fail(invalid(type, "cursor", `is not a cursor this server issued for this list${written === undefined ? "" : ` (order ${written})`}`))
            }
          }
          // A store read failure (a damaged row record, the store closed for a reopen) is a 500 naming it.
          return Effect.map(Effect.orDie(rows.table(type).read({ where, order, ...(after !== undefined ? { after } : {}), limit })), (page): Page => {
            // A partial page holds fewer rows than the limit, even none, and still continues (store-table.ts: scan).
            const last = page.rows[page.rows.length - 1]
            const key = page.resume ?? (last === undefined ? undefined : { id: Number(last.id), value: order.field === "id" ? undefined : last[order.field] })
            if (!page.more || key === undefined) return { items: page.rows }
            const nextCursor = encodeCursor(type, key, written)
            return page.partial === true ? { items: page.rows, nextCursor, partial: true } : { items: page.rows, nextCursor }
          })
        }),
      rowsAfter: cached === undefined
        ? (type, afterId, limit) => Effect.sync(() => rows.table(type).page(afterId, limit))
        : (type, afterId, limit) => cached.fetchPage(type, afterId, limit)
    })
  })

export const QueriesLive = Layer.effect(Queries, makeQueries)
