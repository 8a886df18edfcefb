/**
 * MCP resources generated from the catalog: `wo://schema/<type>` (fields and JSON Schema), `wo://<type>/<id>`
 * (one row, the same bytes as the REST GET), `wo://views/<name>` (a view's value, the same bytes as
 * `GET /api/_views/<name>`), `wo://<type>?<query>` (a filtered list's first page, the same bytes as
 * `GET /api/<type>?<query>`), `wo://<type>/<id>/history` (a row's events with their actors, the same bytes as
 * `GET /api/<type>/<id>/history`; a template, never listed), a keyed view's `wo://views/<name>/<key>` (one entry, the same
 * bytes as `GET /api/_views/<name>/<key>`; a template, never listed: its `wo://views/<name>` reads the first page of
 * entries), and, when the app serves commands over MCP, `wo://schema/_commands` (each app command's
 * name, description and params JSON Schema). Listing walks schemas and views, then each type's rows in id order, with opaque
 * cursors; rows created during a walk appear later in it, and nothing repeats.
 */
import { Effect, Either, Option } from "effect"
import type { CompiledApp, CompiledType } from "../../domain/compile.ts"
import { fromQueryString } from "../../domain/list-request.ts"
import { historyUriTemplate, listUriTemplate, parseUri, type ParsedUri, rowUri, rowUriTemplate, schemaUri, viewEntryUriTemplate, viewUri } from "../../domain/uri.ts"
import { historyBody, type HistoryShape } from "../../projections/history.ts"
import { ResourceCursor } from "../../projections/cursor.ts"
import type { StoreError, ValidationFailed } from "../../domain/errors.ts"
import { NOT_HELD, type QueriesShape } from "../../projections/queries.ts"
import { staleMarker, VIEW_META, ViewRefolding, type StaleMarker, type ViewFailed, type ViewsShape } from "../../projections/views/views.ts"
import { entryBody, entryPageBody, listBody, viewBody } from "../rest/bodies.ts"
import type { KeyedViewsShape } from "../../projections/views/keyed-views.ts"
import { orderSentence } from "./tool-schemas.ts"
import { Op, type Operation } from "../../access/grants.ts"

export interface ResourceEntry {
  readonly uri: string
  readonly name: string
  readonly title?: string
  readonly description?: string
  readonly mimeType: "application/json"
}

export interface ResourceContents {
  readonly uri: string
  readonly mimeType: "application/json"
  readonly text: string
  /** A view served from an older declaration while the current one is folded: its stale mark (`writeonce/view`). */
  readonly _meta?: Readonly<Record<string, unknown>>
}

/** Why a resource cannot be read: it does not exist, its query names a bad field, or its view failed. */
export type ReadProblem =
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "Invalid"; readonly message: string }
  | { readonly _tag: "Failed"; readonly message: string }

/** Which operations the caller may do (grants.ts); absent: all of them (no credential required). */
export type Allowed = ((op: Operation) => boolean) | undefined

export type ResourceTemplate = { uriTemplate: string; name: string; title: string; description: string; mimeType: "application/json" }

export interface Resources {
  /** undefined when the cursor is not one this server issued. Only what `allowed` lets the caller read is listed. */
  readonly list: (cursor: string | undefined, allowed?: Allowed) => Effect.Effect<{ readonly resources: ReadonlyArray<ResourceEntry>; readonly nextCursor?: string } | undefined, StoreError>
  /** The templates of the types `allowed` lets the caller read. */
  readonly templates: (allowed?: Allowed) => ReadonlyArray<ResourceTemplate>
  /** The resource; the app commands' description lists only the commands `allowed` lets the caller run. */
  readonly read: (uri: string, allowed?: Allowed) => Effect.Effect<ResourceContents, ReadProblem>
  /**
   * `read` without an Effect, for every resource but a list (undefined: `read` it), which the direct /mcp route
   * answers at once (transport.ts). A store failure is thrown, as `read` dies of it.
   */
  readonly readNow?: (uri: string, allowed?: Allowed) => Either.Either<ResourceContents, ReadProblem> | undefined
}

/** Rows are read through Queries, like every other read; views from their projection. */
export interface ResourceSources {
  readonly queries: QueriesShape
  readonly views: ViewsShape
  /** The keyed views' entries (absent: a keyed view's resources are not found). */
  readonly keyed?: KeyedViewsShape
  /** Rows' histories, read from the log (absent: no history resources). */
  readonly history?: HistoryShape
}

const NOT_FOUND: ReadProblem = { _tag: "NotFound" }
/** The resource describing the app commands (`_commands` is never a type name). */
export const COMMANDS_URI = "wo://schema/_commands"

/** A keyed view's read that failed, as a resource read says it. */
const keyedProblem = (e: StoreError | ViewFailed | ViewRefolding | ValidationFailed): ReadProblem =>
  e._tag === "ValidationFailed" ? { _tag: "Invalid", message: e.message } : { _tag: "Failed", message: e.message }

export const makeResources = (catalog: CompiledApp, { queries, views, keyed, history }: ResourceSources, pageSize: number): Resources => {
  const exposed = [...catalog.types.values()].filter((t) => t.mcp.size > 0)
  const readable = exposed.filter((t) => t.mcp.has("get"))
  const listable = exposed.filter((t) => t.mcp.has("list"))

  const schemaEntry = (t: CompiledType): ResourceEntry => ({
    uri: schemaUri(t.name),
    name: `schema/${t.name}`,
    title: `${t.name} schema`,
    description: `Fields and JSON Schema of ${t.name}`,
    mimeType: "application/json"
  })
  const schemaText = (t: CompiledType) =>
    JSON.stringify({
      type: t.name,
      description: t.description,
      fields: t.fieldNames,
      methods: [...t.methods.keys()],
      mcp: [...t.mcp],
      rest: [...t.rest],
      jsonSchema: t.fieldsJsonSchema
    })

  const viewEntry = (name: string, description: string | undefined, isKeyed: boolean): ResourceEntry => ({
    uri: viewUri(name),
    name: `views/${name}`,
    title: `${name} view`,
    description: isKeyed
      ? `${description ? `${description} ` : ""}The first page of the keyed view ${name}'s entries; one entry is wo://views/${name}/{key}`
      : description ?? `The value of the view ${name}`,
    mimeType: "application/json"
  })
  // App commands served as tools: one resource describes them all (their tools are `<name>`).
  const commands = [...catalog.commands.values()].filter((c) => c.mcp)
  const commandsEntry: ReadonlyArray<ResourceEntry> = commands.length === 0 ? [] : [{
    uri: COMMANDS_URI,
    name: "schema/_commands",
    title: "App commands",
    description: "The app's commands across types (each atomic: all of its changes or none): name, description and params JSON Schema",
    mimeType: "application/json"
  }]
  const commandsText = (allowed: Allowed) =>
    JSON.stringify({ commands: commands.filter((c) => allowed === undefined || allowed(Op.command(c.name))).map((c) => ({ name: c.name, description: c.description, tool: c.name, rest: c.rest ? `POST /api/_commands/${c.name}` : undefined, jsonSchema: c.paramsJsonSchema })) })
  // The catalog's fixed entries, listed first: each type's schema, the app commands, then each view.
  // Each with what reading it asks, so that a principal lists only what it may read.
  const fixed: ReadonlyArray<readonly [ResourceEntry, Operation | undefined]> = [
    ...exposed.map((t) => [schemaEntry(t), Op.read(t.name)] as const),
    ...commandsEntry.map((e) => [e, undefined] as const),
    ...[...catalog.views.values()].map((v) => [viewEntry(v.name, v.description, v.keyed), Op.view(v.name)] as const)
  ]
  const mayRead = (allowed: Allowed, op: Operation | undefined) =>
    allowed === undefined || (op === undefined ? commands.some((c) => allowed(Op.command(c.name))) : allowed(op))

  /**
   * A page of the entries after the cursor's position, in listing order, that `allowed` lets the caller read: the
   * catalog's fixed entries, then each readable type's rows, read a page at a time (awaiting the store on a node
   * whose rows are a cache of it).
   */
  const list: Resources["list"] = (cursor, allowed) =>
    Effect.suspend(() => {
      let start = { p: -1, a: -1 }
      if (cursor !== undefined) {
        const pos = ResourceCursor.decode(cursor)
        // A row phase's position is a row id (0 or more); -1 only starts the catalog's fixed entries.
        if (Option.isNone(pos) || pos.value.p < -1 || pos.value.p >= Math.max(readable.length, 1) || (pos.value.p >= 0 && pos.value.a < 0)) return Effect.succeed(undefined)
        start = pos.value
      }
      const resources: Array<ResourceEntry> = []
      let last = start
      // The page is full and one more entry follows it: it gets a cursor.
      let more = false
      /** Takes one entry; false once the page is full (this entry is the first of the next page). */
      const take = (position: { p: number; a: number }, entry: ResourceEntry) => {
        if (resources.length === pageSize) return !(more = true)
        resources.push(entry)
        last = position
        return true
      }
      const answer = () => (more ? { resources, nextCursor: ResourceCursor.encode(last) } : { resources })
      if (start.p === -1) {
        for (let i = start.a + 1; i < fixed.length; i++) if (mayRead(allowed, fixed[i][1]) && !take({ p: -1, a: i }, fixed[i][0])) return Effect.succeed(answer())
      }
      /** The rows of readable type `p` after id `after`, then the next types', until the page is full. */
      const rowsFrom = (p: number, after: number): Effect.Effect<void, StoreError> => {
        if (p >= readable.length) return Effect.void
        const t = readable[p]
        // Positions stay those of every readable type: a cursor means the same place for every caller.
        if (!mayRead(allowed, Op.read(t.name))) return rowsFrom(p + 1, 0)
        return Effect.flatMap(queries.rowsAfter(t.name, after, 64), (page) => {
          for (const row of page.rows) {
            if (!take({ p, a: Number(row.id) }, { uri: rowUri(t.name, row.id), name: `${t.name}/${row.id}`, mimeType: "application/json" })) return Effect.void
          }
          const lastRow = page.rows[page.rows.length - 1]
          return page.more && lastRow !== undefined ? rowsFrom(p, Number(lastRow.id)) : rowsFrom(p + 1, 0)
        })
      }
      return Effect.map(rowsFrom(Math.max(start.p, 0), start.p >= 0 ? start.a : 0), answer)
    })

  const contents = (uri: string, text: string): ResourceContents => ({ uri, mimeType: "application/json", text })
  /** A keyed view's former entries carry the whole view's stale mark. */
  const markedContents = (c: ResourceContents, mark: StaleMarker | undefined): ResourceContents => mark === undefined ? c : { ...c, _meta: { [VIEW_META]: mark } }

  const readNow = (uri: string, allowed?: Allowed): Either.Either<ResourceContents, ReadProblem> | undefined => {
    const parsed = parseUri(uri)
    if (parsed === undefined) return Either.left(NOT_FOUND)
    // A keyed view's entries are read from the store: `read` does it.
    if (parsed._tag === "ViewEntry") return catalog.views.get(parsed.name)?.keyed === true && keyed !== undefined ? undefined : Either.left(NOT_FOUND)
    if (parsed._tag === "View" && catalog.views.get(parsed.name)?.keyed === true) return keyed === undefined ? Either.left(NOT_FOUND) : undefined
    if (parsed._tag === "View") {
      const view = views.get(parsed.name)
      if (view === undefined) return Either.left(NOT_FOUND)
      if (view.refolding !== undefined) return Either.left({ _tag: "Failed", message: new ViewRefolding({ name: view.name, reason: view.refolding }).message })
      if (view.failed !== undefined) return Either.left({ _tag: "Failed", message: view.failed })
      const mark = staleMarker(view)
      // Object.assign, not a spread and a new key (a new hidden class per read: edge-types.ts `jsonText`).
      return Either.right(mark === undefined ? contents(uri, viewBody(view)) : Object.assign(contents(uri, viewBody(view)), { _meta: { [VIEW_META]: mark } }))
    }
    if (parsed._tag === "Schema" && uri === COMMANDS_URI) return commands.length === 0 ? Either.left(NOT_FOUND) : Either.right(contents(uri, commandsText(allowed)))
    const type = catalog.types.get(parsed.type)
    if (type === undefined || type.mcp.size === 0) return Either.left(NOT_FOUND)
    switch (parsed._tag) {
      case "Schema":
        return Either.right(contents(uri, schemaText(type)))
      case "Row": {
        if (!type.mcp.has("get")) return Either.left(NOT_FOUND)
        const row = queries.row(type.name, parsed.id)
        // A row a node caching the store does not hold: `read` awaits the store for it.
        if (row === NOT_HELD) return undefined
        return row === undefined ? Either.left(NOT_FOUND) : Either.right(contents(uri, JSON.stringify(row)))
      }
      case "List":
        return type.mcp.has("list") ? undefined : Either.left(NOT_FOUND)
      case "History":
        // Read from the log: `read` does it.
        return type.mcp.has("get") && history !== undefined ? undefined : Either.left(NOT_FOUND)
    }
  }

  /** A row's history page as REST serves it: the first one, or the one the query's `cursor` names. */
  const readHistory = (uri: string, parsed: Extract<ParsedUri, { readonly _tag: "History" }>, history: HistoryShape): Effect.Effect<ResourceContents, ReadProblem> => {
    const query = new URLSearchParams(parsed.query)
    const limit = query.get("limit")
    return history.page(parsed.type, parsed.id, { cursor: query.get("cursor") ?? undefined, ...(limit === null ? {} : { limit: Number(limit) }) }).pipe(
      Effect.mapBoth({
        onFailure: (e): ReadProblem => e._tag === "NotFound" ? NOT_FOUND : e._tag === "ValidationFailed" ? { _tag: "Invalid", message: e.message } : { _tag: "Failed", message: e.message },
        onSuccess: (page) => contents(uri, historyBody(page))
      })
    )
  }

  /** A row read from the store (a node caching it does not hold it). */
  const readRow = (uri: string, type: string, id: string): Effect.Effect<ResourceContents, ReadProblem> =>
    queries.get(type, id).pipe(
      Effect.mapBoth({
        onFailure: (e): ReadProblem => (e._tag === "NotFound" ? NOT_FOUND : { _tag: "Failed", message: e.message }),
        onSuccess: (row) => contents(uri, JSON.stringify(row))
      })
    )

  /** A list's page as REST serves it: the first one, or the one a `cursor` in the query names. */
  const readList = (uri: string, type: CompiledType, query: string): Effect.Effect<ResourceContents, ReadProblem> =>
    Either.match(fromQueryString(type, query), {
      onLeft: (e) => Effect.fail<ReadProblem>({ _tag: "Invalid", message: e.message }),
      onRight: (request) =>
        queries.list(type.name, request).pipe(
          Effect.mapBoth({ onFailure: (e): ReadProblem => ({ _tag: "Invalid", message: e.message }), onSuccess: (page) => contents(uri, listBody(page)) })
        )
    })

  const read: Resources["read"] = (uri, allowed) =>
    Effect.suspend((): Effect.Effect<ResourceContents, ReadProblem> => {
      const now = readNow(uri, allowed)
      if (now !== undefined) return now
      // Only a list or a history of an exposed type, a keyed view's entry or first page, or a row not held by a node
      // caching the store is left to read here.
      const parsed = parseUri(uri) as Extract<ParsedUri, { readonly _tag: "List" | "History" | "ViewEntry" | "View" | "Row" }>
      switch (parsed._tag) {
        case "Row":
          return readRow(uri, parsed.type, parsed.id)
        case "ViewEntry":
          return keyed!.get(parsed.name, parsed.key).pipe(
            Effect.mapError(keyedProblem),
            Effect.flatMap((entry) => entry === undefined ? Effect.fail(NOT_FOUND) : Effect.succeed(markedContents(contents(uri, entryBody(parsed.name, entry)), entry.mark)))
          )
        case "View":
          return keyed!.list(parsed.name, { limit: pageSize }).pipe(Effect.mapBoth({ onFailure: keyedProblem, onSuccess: (page) => markedContents(contents(uri, entryPageBody(parsed.name, page)), page.mark) }))
        case "History":
          return readHistory(uri, parsed, history!)
        case "List":
          return readList(uri, catalog.types.get(parsed.type)!, parsed.query)
      }
    })

  /** Each with what reading it asks, so that a principal sees only the templates of what it may read. */
  const templates: Array<ResourceTemplate & { readonly operation: Operation }> = [
    ...readable.map((t) => ({
      operation: Op.read(t.name),
      uriTemplate: rowUriTemplate(t.name),
      name: t.name,
      title: `One ${t.name} row`,
      description: `A row of ${t.name} by id: {id, version, ...fields}`,
      mimeType: "application/json" as const
    })),
    ...listable.map((t) => ({
      operation: Op.read(t.name),
      uriTemplate: listUriTemplate(t.name, [...t.filterable.keys()]),
      name: `${t.name}_list`,
      title: `A list of ${t.name}`,
      description: `${t.name} rows that match the filters given (all of them: a value, field[gte]=..., field[in]=a,b, field[null]=true); ` +
        `${orderSentence(t)}: the first page, as ` +
        `GET /api/${t.name}?<query> serves it. Subscribe to it as a live query: it is ` +
        `updated whenever a row enters the list, leaves it, or changes while in it.`,
      mimeType: "application/json" as const
    })),
    ...(history === undefined ? [] : readable.map((t) => ({
      operation: Op.read(t.name),
      uriTemplate: historyUriTemplate(t.name),
      name: `${t.name}_history`,
      title: `The history of one ${t.name} row`,
      description: `Every event of a row of ${t.name}, oldest first, each with its actor (who made it): the first page, as ` +
        `GET /api/${t.name}/<id>/history serves it (?cursor=&limit= for a later page). Subscribe to it (without a query) ` +
        `to hear of each new event of the row.`,
      mimeType: "application/json" as const
    }))),
    ...(keyed === undefined ? [] : [...catalog.views.values()].filter((v) => v.keyed).map((v) => ({
      operation: Op.view(v.name),
      uriTemplate: viewEntryUriTemplate(v.name),
      name: `view_${v.name}_entry`,
      title: `One entry of the view ${v.name}`,
      description: `${v.description ? `${v.description} ` : ""}One entry of the keyed view ${v.name} by its key (percent-encoded): {name, key, seq, value}, as ` +
        `GET /api/_views/${v.name}/<key> serves it. Subscribe to it to hear of each change of that entry only.`,
      mimeType: "application/json" as const
    })))
  ]
  const wire: ReadonlyArray<ResourceTemplate> = templates.map(({ operation: _, ...template }) => template)
  return {
    list,
    templates: (allowed) => (allowed === undefined ? wire : wire.filter((_, i) => allowed(templates[i].operation))),
    read,
    readNow
  }
}
