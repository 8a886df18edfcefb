/**
 * Live queries: list URIs (`wo://articles?status=published`) that clients subscribe to. A live query's result
 * set changes when a row enters it, leaves it, or changes while in it: exactly when the row matched its
 * filters before the change or matches them after. Order, limit and cursor select a page of the result, not
 * the result, so they do not change what is notified.
 *
 * Matching a change must not look at every live query: the index keys each query by its type and by one of
 * its equality filters (field and value), so a change looks up, per indexed field of its type, the buckets of the
 * row's old and new value, and checks only the queries found there (plus the type's others: those without an
 * equality filter, whose ranges, sets or null tests are checked on every change of the type).
 */
import { Either } from "effect"
import type { Row } from "../domain/catalog.ts"
import type { CompiledApp } from "../domain/compile.ts"
import { ValidationFailed } from "../domain/errors.ts"
import { fromQueryString, isEquals, matchesAll, type Equals, type Filter } from "../domain/list-request.ts"
import { isCanonicalId } from "../domain/ids.ts"
import { parseUri, viewEntryUri } from "../domain/uri.ts"

export interface LiveQuery {
  readonly uri: string
  readonly type: string
  readonly where: ReadonlyArray<Filter>
}

/**
 * The live query a URI names: undefined when it is not a list URI of a type MCP lists (it then never
 * notifies, like any URI outside the catalog), Left when it names a bad field or value.
 */
export const parseLiveQuery = (catalog: CompiledApp, uri: string): Either.Either<LiveQuery, ValidationFailed> | undefined => {
  const parsed = parseUri(uri)
  if (parsed?._tag !== "List") return undefined
  const type = catalog.types.get(parsed.type)
  if (type === undefined || !type.mcp.has("list")) return undefined
  return Either.map(fromQueryString(type, parsed.query), (request) => ({ uri, type: type.name, where: request.where ?? [] }))
}

/**
 * A subscribed URI, read once where it enters (a subscribe, a listen, a stored session) and passed on as it is:
 * its live query when it names one, so the registry never parses it again.
 */
export interface Topic {
  readonly uri: string
  readonly query?: LiveQuery
  /** A row's history (`wo://<type>/<id>/history`): notified on each new event of the row. */
  readonly history?: true
}

/** A subscription as a session holds it: its topic, and the log sequence it began at (only later changes count). */
export interface HeldTopic {
  readonly topic: Topic
  readonly since: number
}

/** The topic a URI names; Left when it names a live query with a bad field or value (it could never notify). */
export const topicOf = (catalog: CompiledApp, uri: string): Either.Either<Topic, ValidationFailed> => {
  // Row events are published under the canonical id's URI: `wo://members/01` would subscribe to nothing, silently.
  const row = parseUri(uri)
  if ((row?._tag === "Row" || row?._tag === "History") && !isCanonicalId(row.id)) {
    return Either.left(new ValidationFailed({ type: row.type, issues: [{ path: ["uri"], message: `${row.id} is not an id: ids are written as the store assigns them, such as 1 or 42` }] }))
  }
  // A keyed view's entry is notified under the key as viewEntryUri encodes it: any other spelling would hear nothing.
  if (row?._tag === "ViewEntry" && !row.canonical) {
    return Either.left(new ValidationFailed({ type: `_views/${row.name}`, issues: [{ path: ["uri"], message: `write the key percent-encoded as encodeURIComponent does: ${viewEntryUri(row.name, row.key)}` }] }))
  }
  if (row?._tag === "History") {
    // Notices name the history's own URI: one with a page's query would never hear of a change.
    return row.query === ""
      ? Either.right({ uri, history: true })
      : Either.left(new ValidationFailed({ type: row.type, issues: [{ path: ["uri"], message: "subscribe to a row's history without cursor or limit" }] }))
  }
  const query = parseLiveQuery(catalog, uri)
  return query === undefined ? Either.right({ uri }) : Either.map(query, (q) => ({ uri, query: q }))
}

/** A stored subscription's topic: one whose query no longer reads (the catalog changed) just never notifies. */
export const storedTopic = (catalog: CompiledApp, uri: string): Topic => Either.getOrElse(topicOf(catalog, uri), () => ({ uri }))

/** Whether a change of one row, from `before` to `after`, touches the query's result. */
export const touches = (query: LiveQuery, before: Row | null | undefined, after: Row | null | undefined) =>
  matchesAll(query.where, before) || matchesAll(query.where, after)

interface TypeQueries {
  /** Queries without an equality filter: every change of the type is checked against them. */
  readonly all: Set<LiveQuery>
  /** field -> value -> the queries keyed by that filter. */
  readonly byField: Map<string, Map<unknown, Set<LiveQuery>>>
}

/** The filter a query is keyed by: its first equality. */
const keyOf = (query: LiveQuery): Equals | undefined => query.where.find(isEquals)

export class LiveQueryIndex {
  private readonly byType = new Map<string, TypeQueries>()
  private count = 0

  get size() {
    return this.count
  }

  add(query: LiveQuery): void {
    let t = this.byType.get(query.type)
    if (t === undefined) this.byType.set(query.type, (t = { all: new Set(), byField: new Map() }))
    const key = keyOf(query)
    if (key === undefined) t.all.add(query)
    else {
      let values = t.byField.get(key.field)
      if (values === undefined) t.byField.set(key.field, (values = new Map()))
      let queries = values.get(key.value)
      if (queries === undefined) values.set(key.value, (queries = new Set()))
      queries.add(query)
    }
    this.count++
  }

  remove(query: LiveQuery): void {
    const t = this.byType.get(query.type)
    if (t === undefined) return
    const key = keyOf(query)
    if (key === undefined) {
      if (t.all.delete(query)) this.count--
    } else {
      const values = t.byField.get(key.field)
      const queries = values?.get(key.value)
      if (queries?.delete(query)) {
        this.count--
        if (queries.size === 0) values!.delete(key.value)
        if (values!.size === 0) t.byField.delete(key.field)
      }
    }
    if (t.all.size === 0 && t.byField.size === 0) this.byType.delete(query.type)
  }

  /** The URIs of the live queries whose result the change touches, sorted (the order their notices go out). */
  affected(type: string, before: Row | null | undefined, after: Row | null | undefined): Array<string> {
    const t = this.byType.get(type)
    if (t === undefined) return []
    const uris: Array<string> = []
    for (const q of t.all) if (touches(q, before, after)) uris.push(q.uri)
    for (const [field, values] of t.byField) {
      const old = values.get(before?.[field])
      const now = before?.[field] === after?.[field] ? undefined : values.get(after?.[field])
      if (old !== undefined) for (const q of old) if (touches(q, before, after)) uris.push(q.uri)
      if (now !== undefined) for (const q of now) if (touches(q, before, after)) uris.push(q.uri)
    }
    return uris.length > 1 ? uris.sort() : uris
  }
}
