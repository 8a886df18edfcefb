/**
 * A list request, as every surface spells it, checked against the catalog: filters on filterable fields (see
 * filterable.ts), an order, a cursor and a page size. A filter is an equality, a range (gt, gte, lt, lte), a set
 * (in) or a null test; each value is decoded through the field's Schema.
 *  - REST and `wo://<type>?...` URIs: a query string, `?status=published&order=-title&limit=20&cursor=...`,
 *    `?price[gte]=10&price[lt]=20`, `?status[in]=open,pending`, `?assignee[null]=true`.
 *    `limit`, `cursor` and `order` are reserved; any field, a reserved name included, can also be written
 *    `where.<field>=<value>` (`?where.order=3` filters a field named `order`).
 *  - MCP `<type>_list`: `{where: {status: "published", price: {gte: 10, lt: 20}, assignee: null}, order: "-title",
 *    limit, cursor}`.
 * Every problem is a ValidationFailed naming the field and the operator (REST 400, MCP isError).
 */
import { Either } from "effect"
import type { CompiledType } from "./compile.ts"
import { ValidationFailed, type FieldIssue } from "./errors.ts"
import type { FilterableField, Scalar } from "./filterable.ts"
import { FORBIDDEN_KEY, FORBIDDEN_KEYS } from "./rules/input-rules.ts"
import { compareValues } from "./value-order.ts"

/** The field equals the value. */
export interface Equals {
  readonly field: string
  readonly op?: "eq"
  readonly value: Scalar
}

/** One end of a range: the value, and whether the range holds it. */
export interface Bound {
  readonly value: Scalar
  readonly inclusive: boolean
}

/** The field holds a value (never absent or null) between the bounds, in the order lists sort by (value-order.ts). */
export interface InRange {
  readonly field: string
  readonly op: "range"
  readonly lower?: Bound
  readonly upper?: Bound
}

/** The field equals one of the values (distinct, ascending). */
export interface InSet {
  readonly field: string
  readonly op: "in"
  readonly values: ReadonlyArray<Scalar>
}

/** The field is absent or null (`isNull`), or holds a value. */
export interface NullTest {
  readonly field: string
  readonly op: "null"
  readonly isNull: boolean
}

export type Filter = Equals | InRange | InSet | NullTest

export const isEquals = (f: Filter): f is Equals => f.op === undefined || f.op === "eq"

/** The operators a filter is written with, after the field: `price[gte]` on REST, `{gte: …}` on MCP. */
export const OPERATORS = ["gt", "gte", "lt", "lte", "in", "null"] as const
export type Operator = (typeof OPERATORS)[number]

/** The most values an `in` filter takes: each is a walk of its own. */
export const MAX_IN_VALUES = 100

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

/**
 * What a list request is checked against: a type's rows, or a keyed view's entries, which are ordered by their
 * `key` (ascending only) where rows are by `id`.
 */
export type Listable = Pick<CompiledType, "name" | "filterable" | "fieldNames"> & { readonly keyedBy?: "key" }

/** The field a list is ordered by unless it says otherwise. */
const idOf = (type: Listable) => type.keyedBy ?? "id"

/** Whether an order is the default one (a request then carries none). */
const isDefaultOrder = (type: Listable, order: Order) => order.field === idOf(type) && !order.descending

/** `title`, `-title`, `id`: how an order is written on every surface. */
export const orderText = (order: Order) => `${order.descending ? "-" : ""}${order.field}`

/** The orders a type's lists accept, as written: `id`, `-id`, then each filterable field both ways. */
export const orderChoices = (type: Listable): ReadonlyArray<string> => {
  const fields = [...type.filterable.keys()].flatMap((f) => [f, `-${f}`])
  return type.keyedBy === undefined ? ["id", "-id", ...fields] : [type.keyedBy, ...fields]
}

const filterableList = (type: Listable) => [...type.filterable.keys()].join(", ") || "(none)"

const fieldProblem = (type: Listable, field: string): string | undefined => {
  // The input rules' reserved keys, whichever surface named them (a query string, MCP's `where`).
  if (FORBIDDEN_KEYS.has(field)) return FORBIDDEN_KEY
  if (type.filterable.has(field)) return undefined
  return type.fieldNames.includes(field)
    ? `cannot be filtered: only scalar and literal fields can (${filterableList(type)})`
    : `is not a field of ${type.name}; filterable fields: ${filterableList(type)}`
}

/** The order a text names, or the issue. */
export const parseOrder = (type: Listable, text: string, path: ReadonlyArray<string>): Either.Either<Order, FieldIssue> => {
  const descending = text.startsWith("-")
  const field = descending ? text.slice(1) : text
  if (field === idOf(type) && (type.keyedBy === undefined || !descending)) return Either.right({ field, descending, holds: idKey })
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

/** One filter as written: the field, and either its value or its operators with their values. */
type Written =
  | { readonly op: "eq"; readonly decode: (f: FilterableField) => Either.Either<Scalar, string> }
  | { readonly op: Operator; readonly decode: (f: FilterableField) => Either.Either<unknown, string> }

const RANGE_OPERATORS: ReadonlySet<string> = new Set(["gt", "gte", "lt", "lte"])

/** Why `op` does not apply to the field, or undefined. */
const operatorProblem = (f: FilterableField, op: Operator): string | undefined => {
  if (RANGE_OPERATORS.has(op) && f.kind === "boolean") return `${op} does not apply to a boolean field: filter it by a value, in or null`
  if (op === "null" && !f.absentable) return `null does not apply: ${f.name} always has a value (only optional or nullable fields can be absent)`
  return undefined
}

/** The tighter of two bounds on one side: the greater lower bound (`below` false), the smaller upper one. */
const tighter = (a: Bound | undefined, b: Bound, below: boolean): Bound => {
  if (a === undefined) return b
  const c = compareValues(a.value, b.value) * (below ? -1 : 1)
  return c < 0 || (c === 0 && !a.inclusive) ? a : b
}

/**
 * One field's filters from its operators as written (each decoded already), all of which a row must pass: the
 * range its bounds make (the tighter of two on one side), its set, its null test.
 */
const combine = (field: string, ops: ReadonlyArray<readonly [Operator, unknown]>): Array<Filter> => {
  const out: Array<Filter> = []
  let lower: Bound | undefined
  let upper: Bound | undefined
  for (const [op, value] of ops) {
    if (op === "in") out.push({ field, op, values: value as ReadonlyArray<Scalar> })
    else if (op === "null") out.push({ field, op, isNull: value as boolean })
    else if (op === "gt" || op === "gte") lower = tighter(lower, { value: value as Scalar, inclusive: op === "gte" }, false)
    else upper = tighter(upper, { value: value as Scalar, inclusive: op === "lte" }, true)
  }
  if (lower !== undefined || upper !== undefined) {
    out.unshift({ field, op: "range", ...(lower !== undefined ? { lower } : {}), ...(upper !== undefined ? { upper } : {}) })
  }
  return out
}

/** Distinct values, ascending: the order an index walks them in. */
const distinctSorted = (values: ReadonlyArray<Scalar>): ReadonlyArray<Scalar> =>
  [...new Set(values)].sort(compareValues)

/** An `in` list decoded value by value; Left names the first bad one. */
export const decodeInValues = (
  items: ReadonlyArray<unknown>,
  decode: (u: unknown) => Either.Either<Scalar, string>
): Either.Either<ReadonlyArray<Scalar>, string> => {
  if (items.length === 0) return Either.left("in: give at least one value")
  if (items.length > MAX_IN_VALUES) return Either.left(`in: give at most ${MAX_IN_VALUES} values`)
  const out: Array<Scalar> = []
  for (const item of items) {
    const value = decode(item)
    if (Either.isLeft(value)) return Either.left(`in: ${value.left}`)
    out.push(value.right)
  }
  return Either.right(distinctSorted(out))
}

/**
 * Adds one field's filter: `written` holds its equality value or its operators, each read by the field's own
 * decoding (from JSON or from text). `path` names the field as written; an operator's problem names it too.
 */
const addFilter = (
  type: Listable,
  into: Collected,
  field: string,
  path: ReadonlyArray<string>,
  written: ReadonlyArray<Written>
) => {
  const problem = fieldProblem(type, field)
  if (problem !== undefined) return void into.issues.push({ path: [...path], message: problem })
  if (into.where.some((f) => f.field === field)) return void into.issues.push({ path: [...path], message: "is filtered twice; give one value" })
  const filterable = type.filterable.get(field)!
  if (written.filter((w) => w.op === "eq").length > 1) return void into.issues.push({ path: [...path], message: "is filtered twice; give one value" })
  const equalities: Array<Filter> = []
  const ops: Array<readonly [Operator, unknown]> = []
  for (const w of written) {
    const decoded = w.decode(filterable)
    if (w.op === "eq") {
      if (Either.isLeft(decoded)) return void into.issues.push({ path: [...path], message: decoded.left })
      equalities.push({ field, value: decoded.right as Scalar })
      continue
    }
    const op = w.op
    const message = operatorProblem(filterable, op) ?? Either.match(decoded, {
      onLeft: (m) => (m.startsWith(`${op}:`) ? m : `${op}: ${m}`),
      onRight: (value) => void ops.push([op, value])
    })
    if (message !== undefined) return void into.issues.push({ path: [...path], message })
  }
  into.where.push(...equalities, ...combine(field, ops))
}

/** `price[gte]`: the field and the operator a query-string name spells, or undefined when it names no operator. */
const bracketed = (name: string): { readonly field: string; readonly op: string } | undefined => {
  const match = /^(.+)\[([A-Za-z]*)\]$/.exec(name)
  return match === null ? undefined : { field: match[1], op: match[2] }
}

const isOperator = (op: string): op is Operator => (OPERATORS as ReadonlyArray<string>).includes(op)

/** How a query string's text is read for an operator: a value, a comma-separated list (in), true or false (null). */
const fromTextFor = (op: Operator, raw: string): Written => {
  switch (op) {
    case "in":
      // Split before unescaping: `%2C` is a comma inside a value.
      return {
        op,
        decode: (f) => decodeInValues(raw.split(","), (piece) => {
          const text = decodeComponent(piece as string)
          return text === undefined ? Either.left("has an invalid percent-escape") : f.fromText(text)
        })
      }
    case "null": {
      const text = decodeComponent(raw)
      return { op, decode: () => (text === "true" || text === "false" ? Either.right(text === "true") : Either.left(`null: Expected true or false, actual ${JSON.stringify(text)}`)) }
    }
    default: {
      const text = decodeComponent(raw) ?? ""
      return { op, decode: (f) => f.fromText(text) }
    }
  }
}

/** How MCP's `where` value for one field is read: a value, null (the field is absent), or an object of operators. */
const fromJsonWritten = (value: unknown): ReadonlyArray<Written> | string => {
  if (value === null) return [{ op: "null", decode: () => Either.right(true) }]
  if (typeof value !== "object" || Array.isArray(value)) return [{ op: "eq", decode: (f) => f.fromJson(value) }]
  const entries = Object.entries(value)
  if (entries.length === 0) return `give a value, null, or at least one operator (${OPERATORS.join(", ")})`
  const written: Array<Written> = []
  for (const [op, operand] of entries) {
    if (!isOperator(op)) return `${JSON.stringify(op)} is not an operator; one of: ${OPERATORS.join(", ")}`
    switch (op) {
      case "in":
        written.push({ op, decode: (f) => Array.isArray(operand) ? decodeInValues(operand, f.fromJson) : Either.left("in: Expected an array of values") })
        break
      case "null":
        written.push({ op, decode: () => typeof operand === "boolean" ? Either.right(operand) : Either.left(`null: Expected true or false, actual ${JSON.stringify(operand)}`) })
        break
      default:
        written.push({ op, decode: (f) => f.fromJson(operand) })
    }
  }
  return written
}

const result = (type: Listable, collected: Collected, rest: Omit<ListRequest, "where">): Either.Either<ListRequest, ValidationFailed> =>
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
export const queryPairs = (query: string): Either.Either<ReadonlyArray<readonly [string, string]>, FieldIssue> =>
  Either.map(queryParts(query), (parts) => parts.map(([name, value]) => [name, value] as const))

/** The query string's pairs as queryPairs reads them, each with its value as sent too (escapes kept). */
const queryParts = (query: string): Either.Either<ReadonlyArray<readonly [string, string, string]>, FieldIssue> => {
  const pairs: Array<readonly [string, string, string]> = []
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
    pairs.push([name, value, eq < 0 ? "" : part.slice(eq + 1)])
  }
  return Either.right(pairs)
}

/**
 * From a query string (REST, or the query of a `wo://<type>?...` URI), as sent (escapes not yet decoded).
 * `limit` stays a number to be checked by the reader (NaN when it is not one), as REST always did.
 */
export const fromQueryString = (type: Listable, queryText: string): Either.Either<ListRequest, ValidationFailed> => {
  const pairs = queryParts(queryText)
  if (Either.isLeft(pairs)) return Either.left(new ValidationFailed({ type: type.name, issues: [pairs.left] }))
  const query = pairs.right
  // Each field's filter as written, in the order its first parameter came: `price[gte]` and `price[lt]` are one filter.
  const byField = new Map<string, { path: ReadonlyArray<string>; written: Array<Written> }>()
  const opIssues: Array<FieldIssue> = []
  const collected: Collected = { where: [], issues: [] }
  let order: Order | undefined
  let cursor: string | undefined
  let limit: number | undefined
  const seen = new Set<string>()
  for (const [name, value, raw] of query) {
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
    const named = name.startsWith(WHERE_PREFIX) ? name.slice(WHERE_PREFIX.length) : name
    // A name that is a filterable field as it stands is an equality, even when it ends in brackets.
    const withOp = type.filterable.has(named) ? undefined : bracketed(named)
    const field = withOp?.field ?? named
    let entry = byField.get(field)
    if (entry === undefined) byField.set(field, (entry = { path: [field], written: [] }))
    if (withOp === undefined) {
      entry.written.push({ op: "eq", decode: (f) => f.fromText(value) })
      continue
    }
    if (!isOperator(withOp.op)) {
      opIssues.push({ path: [named], message: `${JSON.stringify(withOp.op)} is not an operator; one of: ${OPERATORS.join(", ")}` })
      continue
    }
    if (entry.written.some((w) => w.op === withOp.op)) {
      opIssues.push({ path: [named], message: "is given twice; give one value" })
      continue
    }
    entry.written.push(fromTextFor(withOp.op, raw))
  }
  for (const [field, { path, written }] of byField) if (written.length > 0) addFilter(type, collected, field, path, written)
  collected.issues.push(...opIssues)
  return result(type, collected, {
    ...(order !== undefined && !isDefaultOrder(type, order) ? { order } : {}),
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
  type: Listable,
  args: { readonly where?: Readonly<Record<string, unknown>>; readonly order?: string; readonly cursor?: string; readonly limit?: number }
): Either.Either<ListRequest, ValidationFailed> => {
  const collected: Collected = { where: [], issues: [] }
  for (const [field, value] of Object.entries(args.where ?? {})) {
    const written = fromJsonWritten(value)
    if (typeof written === "string") {
      const problem = fieldProblem(type, field)
      collected.issues.push({ path: ["where", field], message: problem ?? written })
    } else addFilter(type, collected, field, ["where", field], written)
  }
  let order: Order | undefined
  if (args.order !== undefined) {
    Either.match(parseOrder(type, args.order, ["order"]), { onLeft: (i) => collected.issues.push(i), onRight: (o) => (order = o) })
  }
  return result(type, collected, {
    ...(order !== undefined && !isDefaultOrder(type, order) ? { order } : {}),
    ...(args.cursor !== undefined ? { cursor: args.cursor } : {}),
    ...(args.limit !== undefined ? { limit: args.limit } : {})
  })
}

/** Whether a field's value passes the filter (values are encoded: a value compares with `===`, a range in list order). */
export const matchesFilter = (f: Filter, value: unknown): boolean => {
  switch (f.op) {
    case undefined:
    case "eq":
      return value === f.value
    case "in":
      return f.values.includes(value as Scalar)
    case "null":
      return (value === null || value === undefined) === f.isNull
    case "range": {
      if (value === null || value === undefined) return false
      if (f.lower !== undefined) {
        const c = compareValues(value, f.lower.value)
        if (c < 0 || (c === 0 && !f.lower.inclusive)) return false
      }
      if (f.upper !== undefined) {
        const c = compareValues(value, f.upper.value)
        if (c > 0 || (c === 0 && !f.upper.inclusive)) return false
      }
      return true
    }
  }
}

/** Whether a row satisfies every filter. */
export const matchesAll = (where: ReadonlyArray<Filter>, row: Readonly<Record<string, unknown>> | null | undefined) => {
  if (row === null || row === undefined) return false
  for (const f of where) {
    // Equality first and inline: the hot path of every filtered page and live query.
    if (f.op === undefined ? row[f.field] !== f.value : !matchesFilter(f, row[f.field])) return false
  }
  return true
}
