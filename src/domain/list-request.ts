/**
 * A list request, as every surface spells it, checked against the catalog: equality filters on filterable
 * fields (see filterable.ts), an order, a cursor and a page size.
 *  - REST and `wo://<type>?...` URIs: a query string, `?status=published&order=-title&limit=20&cursor=...`.
 *    `limit`, `cursor` and `order` are reserved; any field, a reserved name included, can also be written
 *    `where.<field>=<value>` (`?where.order=3` filters a field named `order`).
 *  - MCP `<type>_list`: `{where: {status: "published"}, order: "-title", limit, cursor}`.
 * Every problem is a ValidationFailed naming the field (REST 400, MCP isError).
 */
import { Either } from "effect"
import type { CompiledType } from "./compile.ts"
import { ValidationFailed, type FieldIssue } from "./errors.ts"
import type { Scalar } from "./filterable.ts"
import { FORBIDDEN_KEY, FORBIDDEN_KEYS } from "./rules/input-rules.ts"

export interface Filter {
  readonly field: string
  readonly value: Scalar
}

/** `id` or a filterable field, ascending unless `descending`. */
export interface Order {
  readonly field: string
  readonly descending: boolean
  /**
   * Whether a value (undefined: absent) could be this order's sort key, so a cursor naming another one (a
   * tampered or foreign cursor) is refused rather than served as a page. Absent: any value.
   */
  readonly holds?: (value: Scalar | undefined) => boolean
}

export interface ListRequest {
  readonly where?: ReadonlyArray<Filter>
  /** Absent: id order, ascending. */
  readonly order?: Order
  readonly cursor?: string
  readonly limit?: number
}

/** Query-string names that are not filters. */
export const RESERVED_QUERY_NAMES: ReadonlyArray<string> = ["limit", "cursor", "order"]
/** `where.<field>=<value>` filters any field, whatever its name. */
export const WHERE_PREFIX = "where."

/** Ordered by id, the key is the id itself: a cursor carries no other value. */
const idKey = (value: Scalar | undefined) => value === undefined

export const ID_ORDER: Order = { field: "id", descending: false, holds: idKey }

/** `title`, `-title`, `id`: how an order is written on every surface. */
export const orderText = (order: Order) => `${order.descending ? "-" : ""}${order.field}`

/** The orders a type's lists accept, as written: `id`, `-id`, then each filterable field both ways. */
export const orderChoices = (type: CompiledType): ReadonlyArray<string> =>
  ["id", ...type.filterable.keys()].flatMap((f) => [f, `-${f}`])

const filterableList = (type: CompiledType) => [...type.filterable.keys()].join(", ") || "(none)"

const fieldProblem = (type: CompiledType, field: string): string | undefined => {
  // The input rules' reserved keys, whichever surface named them (a query string, MCP's `where`).
  if (FORBIDDEN_KEYS.has(field)) return FORBIDDEN_KEY
  if (type.filterable.has(field)) return undefined
  return type.fieldNames.includes(field)
    ? `cannot be filtered: only scalar and literal fields can (${filterableList(type)})`
    : `is not a field of ${type.name}; filterable fields: ${filterableList(type)}`
}

/** The order a text names, or the issue. */
export const parseOrder = (type: CompiledType, text: string, path: ReadonlyArray<string>): Either.Either<Order, FieldIssue> => {
  const descending = text.startsWith("-")
  const field = descending ? text.slice(1) : text
  if (field === "id") return Either.right({ field, descending, holds: idKey })
  const filterable = type.filterable.get(field)
  if (filterable !== undefined) {
    const holds = (value: Scalar | undefined) => (value === undefined ? filterable.absentable : Either.isRight(filterable.fromJson(value)))
    return Either.right({ field, descending, holds })
  }
  return Either.left({ path: [...path], message: `${JSON.stringify(text)} is not an order of ${type.name}; one of: ${orderChoices(type).join(", ")}` })
}

interface Collected {
  readonly where: Array<Filter>
  readonly issues: Array<FieldIssue>
}

const addFilter = (
  type: CompiledType,
  into: Collected,
  field: string,
  path: ReadonlyArray<string>,
  decode: () => Either.Either<Scalar, string>
) => {
  const problem = fieldProblem(type, field)
  if (problem !== undefined) return void into.issues.push({ path: [...path], message: problem })
  if (into.where.some((f) => f.field === field)) return void into.issues.push({ path: [...path], message: "is filtered twice; give one value" })
  Either.match(decode(), {
    onLeft: (message) => into.issues.push({ path: [...path], message }),
    onRight: (value) => into.where.push({ field, value })
  })
}

const result = (type: CompiledType, collected: Collected, rest: Omit<ListRequest, "where">): Either.Either<ListRequest, ValidationFailed> =>
  collected.issues.length > 0
    ? Either.left(new ValidationFailed({ type: type.name, issues: collected.issues }))
    : Either.right({ ...rest, ...(collected.where.length > 0 ? { where: collected.where } : {}) })

const decodeComponent = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text.replace(/\+/g, " "))
  } catch {
    return undefined
  }
}

/**
 * A query string's name-value pairs, read as URLSearchParams reads them, except that a malformed escape (`%ff`,
 * which is no UTF-8, or a lone `%`) is refused, naming the parameter, rather than read as U+FFFD or kept as is:
 * a filter would otherwise compare other text than was sent.
 */
export const queryPairs = (query: string): Either.Either<ReadonlyArray<readonly [string, string]>, FieldIssue> => {
  const pairs: Array<readonly [string, string]> = []
  for (const part of (query.startsWith("?") ? query.slice(1) : query).split("&")) {
    if (part === "") continue
    const eq = part.indexOf("=")
    const rawName = eq < 0 ? part : part.slice(0, eq)
    const name = decodeComponent(rawName)
    const value = decodeComponent(eq < 0 ? "" : part.slice(eq + 1))
    if (name === undefined || value === undefined) {
      return Either.left({
        path: [name ?? rawName],
        message: "has an invalid percent-escape: write each byte as %XX, and the bytes as UTF-8"
      })
    }
    pairs.push([name, value])
  }
  return Either.right(pairs)
}

/**
 * From a query string (REST, or the query of a `wo://<type>?...` URI), as sent (escapes not yet decoded).
 * `limit` stays a number to be checked by the reader (NaN when it is not one), as REST always did.
 */
export const fromQueryString = (type: CompiledType, queryText: string): Either.Either<ListRequest, ValidationFailed> => {
  const pairs = queryPairs(queryText)
  if (Either.isLeft(pairs)) return Either.left(new ValidationFailed({ type: type.name, issues: [pairs.left] }))
  const query = pairs.right
  const collected: Collected = { where: [], issues: [] }
  let order: Order | undefined
  let cursor: string | undefined
  let limit: number | undefined
  const seen = new Set<string>()
  for (const [name, value] of query) {
    if (RESERVED_QUERY_NAMES.includes(name)) {
      if (seen.has(name)) {
        collected.issues.push({ path: [name], message: "is given twice; give one value" })
        continue
      }
      seen.add(name)
      if (name === "limit") limit = Number(value)
      else if (name === "cursor") cursor = value
      else Either.match(parseOrder(type, value, ["order"]), { onLeft: (i) => collected.issues.push(i), onRight: (o) => (order = o) })
      continue
    }
    const field = name.startsWith(WHERE_PREFIX) ? name.slice(WHERE_PREFIX.length) : name
    addFilter(type, collected, field, [field], () => type.filterable.get(field)!.fromText(value))
  }
  return result(type, collected, {
    ...(order !== undefined && (order.field !== "id" || order.descending) ? { order } : {}),
    ...(cursor !== undefined ? { cursor } : {}),
    ...(limit !== undefined ? { limit } : {})
  })
}

/**
 * From MCP list arguments, whose shape (`where` an object, `order` a string) Schema has already checked.
 * `where` must be the object as parsed, not Schema's decoded copy: a Record decode drops an own `__proto__`
 * key, which must be refused here as on REST.
 */
export const fromArguments = (
  type: CompiledType,
  args: { readonly where?: Readonly<Record<string, unknown>>; readonly order?: string; readonly cursor?: string; readonly limit?: number }
): Either.Either<ListRequest, ValidationFailed> => {
  const collected: Collected = { where: [], issues: [] }
  for (const [field, value] of Object.entries(args.where ?? {})) {
    addFilter(type, collected, field, ["where", field], () => type.filterable.get(field)!.fromJson(value))
  }
  let order: Order | undefined
  if (args.order !== undefined) {
    Either.match(parseOrder(type, args.order, ["order"]), { onLeft: (i) => collected.issues.push(i), onRight: (o) => (order = o) })
  }
  return result(type, collected, {
    ...(order !== undefined && (order.field !== "id" || order.descending) ? { order } : {}),
    ...(args.cursor !== undefined ? { cursor: args.cursor } : {}),
    ...(args.limit !== undefined ? { limit: args.limit } : {})
  })
}

/** Whether a row satisfies every filter (rows hold encoded values; filters compare with `===`). */
export const matchesAll = (where: ReadonlyArray<Filter>, row: Readonly<Record<string, unknown>> | null | undefined) => {
  if (row === null || row === undefined) return false
  for (const f of where) if (row[f.field] !== f.value) return false
  return true
}
