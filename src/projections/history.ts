/**
 * A row's history: its events oldest first, a page at a time, each with its actor (who made it), as
 * `GET /api/<type>/<id>/history` and the resource `wo://<type>/<id>/history` serve it. Read from the log through its
 * per-entity index (EventLog.history), never from a scan. A row deleted since still has its history: what was done
 * to it, and by whom, outlives it. No such row ever (no event) is NotFound.
 */
import { Effect, Option, Schema } from "effect"
import { NotFound, ValidationFailed } from "../domain/errors.ts"
import { StoreFailed, type StoreError } from "../domain/store-errors.ts"
import type { StoredEvent } from "../domain/events.ts"
import { isCanonicalId } from "../domain/ids.ts"
import type { EventLogShape } from "../log/event-log.ts"
import { makeCursor } from "./cursor.ts"

export interface HistoryPage {
  readonly items: ReadonlyArray<StoredEvent>
  readonly nextCursor?: string
}

/** A page request: `cursor` from the page before, `limit` (NaN when the query's was not a number). */
export interface HistoryRequest {
  readonly cursor?: string
  readonly limit?: number
}

/** Where a history continues: the row (`type/id`) and the last version served, so that another row's cursor is refused. */
const HistoryPosition = makeCursor(Schema.Struct({ h: Schema.String, v: Schema.Int.pipe(Schema.nonNegative()) }))

/** `{"items":[<event>,...],"nextCursor":"..."}`: REST and the resource carry the same bytes. */
export const historyBody = (page: HistoryPage) =>
  `{"items":[${page.items.map((e) => JSON.stringify(e)).join(",")}]${page.nextCursor === undefined ? "" : `,"nextCursor":${JSON.stringify(page.nextCursor)}`}}`

export const makeHistory = (log: EventLogShape, pageSizes: { readonly defaultPageSize: number; readonly maxPageSize: number }) => {
  const invalid = (type: string, path: string, message: string) => new ValidationFailed({ type, issues: [{ path: [path], message }] })
  return {
    page: (type: string, id: string, { cursor, limit = pageSizes.defaultPageSize }: HistoryRequest): Effect.Effect<HistoryPage, NotFound | ValidationFailed | StoreError> =>
      Effect.suspend((): Effect.Effect<HistoryPage, NotFound | ValidationFailed | StoreError> => {
        if (log.history === undefined) return Effect.fail(new StoreFailed({ reason: "this store cannot read a row's history" }))
        // One row, one name: another spelling of an id is no row (domain/ids.ts).
        if (!isCanonicalId(id)) return Effect.fail(new NotFound({ type, id }))
        if (!Number.isInteger(limit) || limit < 1 || limit > pageSizes.maxPageSize) {
          return Effect.fail(invalid(type, "limit", `must be an integer from 1 to ${pageSizes.maxPageSize}`))
        }
        let after = 0
        if (cursor !== undefined) {
          const position = HistoryPosition.decode(cursor)
          if (Option.isNone(position) || position.value.h !== `${type}/${id}`) {
            return Effect.fail(invalid(type, "cursor", "is not a cursor this server issued for this history"))
          }
          after = position.value.v
        }
        // One more than the page: whether another page follows is known without an empty last page.
        return Effect.flatMap(log.history(type, id, after, limit + 1), (events): Effect.Effect<HistoryPage, NotFound> => {
          if (events.length === 0 && cursor === undefined) return Effect.fail(new NotFound({ type, id }))
          if (events.length <= limit) return Effect.succeed({ items: events })
          const items = events.slice(0, limit)
          return Effect.succeed({ items, nextCursor: HistoryPosition.encode({ h: `${type}/${id}`, v: items[items.length - 1].version }) })
        })
      })
  }
}

export type HistoryShape = ReturnType<typeof makeHistory>
