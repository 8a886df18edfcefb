/**
 * Reads, shared by REST, MCP tools and MCP resources (no second data path): one row, or one page of rows
 * with an opaque cursor.
 */
import { Context, Effect, Layer } from "effect"
import type { Row } from "../domain/catalog.ts"
import { NotFound, ValidationFailed } from "../domain/errors.ts"
import { WoConfig } from "../config.ts"
import { decodeCursor, encodeCursor } from "./cursor.ts"
import { Rows } from "./rows.ts"

export interface Page {
  readonly items: ReadonlyArray<Row>
  /** Present when more rows follow. */
  readonly nextCursor?: string
}

export interface PageRequest {
  readonly cursor?: string
  readonly limit?: number
}

export interface QueriesShape {
  readonly get: (type: string, id: string) => Effect.Effect<Row, NotFound>
  readonly list: (type: string, request: PageRequest) => Effect.Effect<Page, ValidationFailed>
}

export class Queries extends Context.Tag("writeonce/Queries")<Queries, QueriesShape>() {}

export const QueriesLive = Layer.effect(
  Queries,
  Effect.gen(function* () {
    const rows = yield* Rows
    const { defaultPageSize, maxPageSize } = yield* WoConfig
    const invalid = (type: string, path: string, message: string) =>
      new ValidationFailed({ type, issues: [{ path: [path], message }] })
    return Queries.of({
      get: (type, id) =>
        Effect.suspend(() => {
          const row = rows.get(type, id)
          return row === undefined ? Effect.fail(new NotFound({ type, id })) : Effect.succeed(row)
        }),
      list: (type, { cursor, limit = defaultPageSize }) =>
        Effect.suspend(() => {
          if (!Number.isInteger(limit) || limit < 1 || limit > maxPageSize) {
            return Effect.fail(invalid(type, "limit", `must be an integer from 1 to ${maxPageSize}`))
          }
          let after = 0
          if (cursor !== undefined) {
            const decoded = decodeCursor(type, cursor)
            if (decoded === undefined) return Effect.fail(invalid(type, "cursor", "is not a cursor this server issued"))
            after = decoded
          }
          const page = rows.table(type).page(after, limit)
          const last = page.rows[page.rows.length - 1]
          return Effect.succeed(
            page.more && last !== undefined ? { items: page.rows, nextCursor: encodeCursor(type, Number(last.id)) } : { items: page.rows }
          )
        })
    })
  })
)
