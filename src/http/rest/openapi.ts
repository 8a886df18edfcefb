/**
 * The REST API as an OpenAPI 3.1 document, `GET /api/_openapi.json`, made from the compiled catalog: each type's
 * exposed CRUD routes, methods and history, the app commands, the views, the event log (SSE) and the health
 * probes, with their bodies (the same JSON Schemas the MCP tools carry), parameters, headers and refusals.
 *
 * A principal sees only the routes it may use: each route is kept when the operation the router would ask of it
 * (access/operations.ts) is granted, so the document cannot promise more than the server serves that caller.
 */
import { Effect } from "effect"
import type { CompiledApp, CompiledType } from "../../domain/compile.ts"
import { withoutProperties, type JsonSchema } from "../../domain/json-schema.ts"
import { MAX_IN_VALUES, orderChoices, RESERVED_QUERY_NAMES, WHERE_PREFIX, type Listable } from "../../domain/list-request.ts"
import type { CompiledView } from "../../domain/compile-views.ts"
import { entryListable } from "../../domain/keyed-list-request.ts"
import type { FilterableField } from "../../domain/filterable.ts"
import { DEFAULT_REJECTION_CODE } from "../../domain/catalog.ts"
import { GUARDED_FIELD } from "../../domain/rules/guarded.ts"
import { MISSING_REFERENCE, STILL_REFERENCED } from "../../commands/reference-check.ts"
import { COMMAND_RESULT, objectSchema, propertiesOf, requiredOf, ROW_KEYS, withoutDefaults } from "../mcp/tool-schemas.ts"
import { ANY, requestOperation } from "../../access/operations.ts"
import { may, type Principal } from "../../access/principal.ts"
import type { AccessShape } from "../../access/access.ts"
import { METRICS_PATH } from "../routes/metrics-route.ts"
import { VERSION } from "../../support/version.ts"
import { errorJson, jsonText, type EdgeRequest, type EdgeResponse } from "../edge/edge-types.ts"

export const OPENAPI_PATH = "/api/_openapi.json"

export interface OpenApiOptions {
  /** WO_MAX_PAGE_SIZE: the largest `limit` a list or a history takes. */
  readonly maxPageSize: number
  /** Whether requests need a bearer credential (a token, an access file or OAuth). */
  readonly bearer: boolean
  /** Whether the caller may use `method path` (a path with `{id}` in it stands for any id). */
  readonly allowed: (method: string, path: string) => boolean
}

type OperationObject = Record<string, unknown>
type PathItem = Record<string, unknown>

const ref = (group: "schemas" | "responses" | "parameters" | "headers", name: string) => ({ $ref: `#/components/${group}/${name}` })
const jsonContent = (schema: JsonSchema) => ({ "application/json": { schema } })

// --- Shared parts ------------------------------------------------------------------------------------------------

/** An object with any properties (`{type: "object"}` alone reads as an empty object to client generators). */
const ANY_OBJECT = { type: "object", additionalProperties: {} }

/** An app command's result as the MCP tools describe it, with each change's row as any object, or null. */
const commandResult = (): JsonSchema => {
  const properties = propertiesOf(COMMAND_RESULT)
  const changes = properties.changes as { readonly items: JsonSchema }
  return {
    ...COMMAND_RESULT,
    properties: {
      ...properties,
      changes: { ...changes, items: { ...changes.items, properties: { ...propertiesOf(changes.items), row: { anyOf: [ANY_OBJECT, { type: "null" }] } } } }
    }
  }
}

const ERROR = objectSchema({
  error: { type: "string", description: "the refusal's name (ValidationFailed, NotFound, VersionConflict, Rejected, ...)" },
  message: { type: "string" }
}, ["error", "message"], false)

/** `{error, message, ...extra}` with some extra properties (errorJson in edge-types.ts). */
const errorWith = (properties: Record<string, unknown>, required: ReadonlyArray<string> = []): JsonSchema => ({
  allOf: [ref("schemas", "Error"), objectSchema(properties, required, false)]
})

const SCHEMAS: Record<string, JsonSchema> = {
  Error: ERROR,
  ValidationError: errorWith({
    issues: {
      type: "array",
      description: "one per field, at most 20",
      items: objectSchema({ path: { type: "array", items: { type: ["string", "number"] } }, message: { type: "string" } }, ["path", "message"], false)
    },
    omitted: { type: "integer", description: "issues left out past the first 20" }
  }),
  VersionConflict: errorWith({ expected: { type: "integer" }, actual: { type: "integer" } }, ["expected", "actual"]),
  Refusal: errorWith({
    code: {
      type: "string",
      description: `with error "Rejected": the refusal's code, for a client to branch on: the app's own (${DEFAULT_REJECTION_CODE} for a plain reject, an invariant's name), or ${MISSING_REFERENCE}, ${STILL_REFERENCED}, ${GUARDED_FIELD}`
    },
    key: { type: "string", description: "with error \"IdempotencyKeyReused\": the Idempotency-Key sent before with another request" }
  }),
  Forbidden: errorWith({ grant: { type: "string", description: "the grant the principal lacks" } }, ["grant"]),
  TooManyRequests: errorWith({ limit: { type: "string" } }),
  Deleted: objectSchema({ id: { type: "string" }, version: { type: "integer" }, deleted: { const: true } }, ["id", "version", "deleted"], false),
  Event: objectSchema({
    seq: { type: "integer", minimum: 1, description: "the log's sequence, from 1, without gaps" },
    at: { type: "integer", description: "commit time, epoch milliseconds" },
    type: { type: "string" },
    id: { type: "string" },
    version: { type: "integer", minimum: 1, description: "the row's version after this event" },
    schema: { type: "integer", description: "the type's schema version when written (absent: 1)" },
    kind: { type: "string", enum: ["created", "updated", "deleted", "invoked"] },
    method: { type: "string" },
    params: ANY_OBJECT,
    data: { ...ANY_OBJECT, description: "created: every field; updated and invoked: the changed fields; deleted: {}" },
    command: { type: "string", description: "the app command that wrote it" },
    correlation: { type: "string" },
    actor: objectSchema({
      principal: { type: "string" },
      client: { anyOf: [{ type: "string" }, ANY_OBJECT] },
      onBehalfOf: { type: "string" }
    }, [], false)
  }, ["seq", "at", "type", "id", "version", "kind", "data"], false),
  EventPage: objectSchema({ items: { type: "array", items: ref("schemas", "Event") }, nextCursor: { type: "string" } }, ["items"], false),
  CommandResult: commandResult(),
  ViewList: objectSchema({
    views: {
      type: "array",
      items: objectSchema({
        name: { type: "string" },
        seq: { type: "integer" },
        value: {},
        failed: { type: "string" },
        refolding: { type: "string" },
        stale: objectSchema({
          version: { type: "string" },
          exactAt: { type: "integer" },
          nextVersion: { type: "string" },
          nextFailed: { type: "string" }
        }, ["version", "exactAt", "nextVersion"], false),
        keyed: { const: true, description: "a keyed view: listed without its entries, read at `entries`" },
        entries: { type: "string", description: "a keyed view's list route" }
      }, ["name"], false)
    }
  }, ["views"], false)
}

const retryAfter = { description: "seconds to wait before retrying", schema: { type: "integer" } }
const HEADERS = {
  ETag: { description: "the row's version, quoted: send it back as If-Match", schema: { type: "string" } },
  "Retry-After": retryAfter,
  Location: { description: "the new row's path", schema: { type: "string" } },
  "Idempotent-Replayed": { description: "\"true\" when this is the answer given before to the same Idempotency-Key", schema: { type: "string" } },
  "WWW-Authenticate": { schema: { type: "string" } }
}

const refused = (description: string, schema = "Error", headers?: Record<string, unknown>) => ({
  description,
  content: jsonContent(ref("schemas", schema)),
  ...(headers === undefined ? {} : { headers })
})

const RESPONSES = {
  BadRequest: refused("invalid input (ValidationFailed, with one issue per field) or a body that is not JSON (InvalidJson)", "ValidationError"),
  Unauthorized: refused("no valid bearer token", "Error", { "WWW-Authenticate": ref("headers", "WWW-Authenticate") }),
  Forbidden: refused("the principal lacks the grant", "Forbidden"),
  NotFound: refused("no such row, command, view or route"),
  Conflict: refused("the row is at another version than expectedVersion", "VersionConflict"),
  PreconditionFailed: refused("the row is at another version than If-Match", "VersionConflict"),
  PayloadTooLarge: refused("the body is over the limit (WO_BODY_LIMIT)"),
  UnsupportedMediaType: refused("the body is not Content-Type: application/json"),
  Refused: refused("refused by the domain (Rejected, with its code) or an Idempotency-Key reused for another request (IdempotencyKeyReused)", "Refusal"),
  MethodFailed: refused("the app's code threw (MethodFailed)"),
  TooManyRequests: refused("the principal's write limit is reached", "TooManyRequests", { "Retry-After": ref("headers", "Retry-After") }),
  Unavailable: refused("the store cannot serve now (StoreUnavailable); retry after Retry-After when given", "Error", { "Retry-After": ref("headers", "Retry-After") })
}

const PARAMETERS = {
  Id: { name: "id", in: "path", required: true, schema: { type: "string", minLength: 1 }, description: "the row's id" },
  Cursor: { name: "cursor", in: "query", schema: { type: "string" }, description: "nextCursor from the previous page (of the same filters and order)" },
  IfMatch: { name: "If-Match", in: "header", schema: { type: "string" }, description: "the version the row must be at, as its ETag (\"3\"): else 412" },
  IdempotencyKey: {
    name: "Idempotency-Key",
    in: "header",
    schema: { type: "string" },
    description: "a key of the client's: a retry with the same key gets the first answer again instead of writing twice"
  }
}

const limitParameter = (maxPageSize: number) => ({
  name: "limit",
  in: "query",
  schema: { type: "integer", minimum: 1, maximum: maxPageSize },
  description: "items per page"
})

/** The refusals every route under /api/ can answer, besides its own. */
const accessRefusals = (bearer: boolean, write: boolean): Record<string, unknown> =>
  bearer
    ? { 401: ref("responses", "Unauthorized"), 403: ref("responses", "Forbidden"), ...(write ? { 429: ref("responses", "TooManyRequests") } : {}) }
    : {}

/** A write's refusals (other than access's): `ifMatch` for writes to an existing row. */
const writeRefusals = (body: boolean, existing: boolean, failing: boolean): Record<string, unknown> => ({
  ...(body ? { 400: ref("responses", "BadRequest"), 413: ref("responses", "PayloadTooLarge"), 415: ref("responses", "UnsupportedMediaType") } : { 400: ref("responses", "BadRequest") }),
  ...(existing ? { 404: ref("responses", "NotFound"), 409: ref("responses", "Conflict"), 412: ref("responses", "PreconditionFailed") } : {}),
  422: ref("responses", "Refused"),
  ...(failing ? { 500: ref("responses", "MethodFailed") } : {}),
  503: ref("responses", "Unavailable")
})

const rowAnswer = (type: string, description: string, extraHeaders: Record<string, unknown> = {}) => ({
  description,
  headers: { ETag: ref("headers", "ETag"), "Idempotent-Replayed": ref("headers", "Idempotent-Replayed"), ...extraHeaders },
  content: jsonContent(ref("schemas", type))
})

// --- Lists -------------------------------------------------------------------------------------------------------

/** A filter value as a query string spells it (the text is decoded through the field's own schema). */
const filterValueSchema = (field: FilterableField): JsonSchema =>
  field.kind === "literal" ? { enum: [...field.literals] } : { type: field.kind }

/** The range operators of a list filter, and what each keeps. */
const RANGES: ReadonlyArray<readonly [string, string]> = [["gt", "greater than"], ["gte", "at least"], ["lt", "less than"], ["lte", "at most"]]

/** A filterable field's query parameters: equality, the ranges (not on a boolean), `in`, and `null` when it may be absent. */
const filterParameters = (field: FilterableField): ReadonlyArray<Record<string, unknown>> => {
  const name = RESERVED_QUERY_NAMES.includes(field.name) ? `${WHERE_PREFIX}${field.name}` : field.name
  const value = filterValueSchema(field)
  return [
    { name, in: "query", schema: value, description: `only rows whose ${field.name} equals this value` },
    ...(field.kind === "boolean" ? [] : RANGES.map(([op, what]) => ({
      name: `${name}[${op}]`,
      in: "query",
      schema: value,
      description: `only rows whose ${field.name} is ${what} this value (rows without one never match)`
    }))),
    {
      name: `${name}[in]`,
      in: "query",
      schema: { type: "string" },
      description: `only rows whose ${field.name} is one of these values, comma-separated (at most ${MAX_IN_VALUES}; %2C is a comma inside a value)`
    },
    ...(field.absentable
      ? [{ name: `${name}[null]`, in: "query", schema: { type: "boolean" }, description: `true: only rows without a ${field.name}; false: only rows with one` }]
      : [])
  ]
}

/**
 * A list's query parameters: `limit`, `cursor`, `order`, and each filterable field's filters (written
 * `where.<field>` when the field's name is a reserved one).
 */
export const listParameters = (type: Listable, maxPageSize: number): ReadonlyArray<Record<string, unknown>> => [
  limitParameter(maxPageSize),
  ref("parameters", "Cursor"),
  { name: "order", in: "query", schema: { type: "string", enum: [...orderChoices(type)] }, description: `sort by a field, "-" for descending; default ${type.keyedBy ?? "id"}` },
  ...[...type.filterable.values()].flatMap(filterParameters)
]

// --- Routes ------------------------------------------------------------------------------------------------------

const body = (schema: string, required = true) => ({ required, content: jsonContent(ref("schemas", schema)) })

const describe = (summary: string, description: string | undefined) => ({ summary, ...(description ? { description } : {}) })

/** A type's schemas: its row, the bodies of create and update, each method's params, a page. */
const typeSchemas = (type: CompiledType): Record<string, JsonSchema> => {
  const fields = type.fieldsJsonSchema
  const input = withoutProperties(fields, type.rules.guarded)
  return {
    [type.name]: {
      ...objectSchema({ ...ROW_KEYS.properties, ...propertiesOf(fields) }, [...ROW_KEYS.required, ...requiredOf(fields)], false),
      ...(type.description ? { description: type.description } : {})
    },
    [`${type.name}.create`]: input,
    [`${type.name}.update`]: objectSchema(withoutDefaults(propertiesOf(input)), []),
    [`${type.name}.page`]: objectSchema({
      items: { type: "array", items: ref("schemas", type.name) },
      nextCursor: { type: "string", description: "absent on the last page" },
      partial: { type: "boolean", description: "the page read only part of the rows: follow nextCursor even when items is empty" }
    }, ["items"], false),
    ...Object.fromEntries([...type.methods.values()].filter((m) => type.rest.has(m.name)).map((m) => [`${type.name}.${m.name}`, m.paramsJsonSchema]))
  }
}

/** A type's paths: the collection, the item, each exposed method, the history. */
const typePaths = (type: CompiledType, options: OpenApiOptions): Record<string, PathItem> => {
  const t = type.name
  const collection = `/api/${t}`
  const item = `/api/${t}/{id}`
  const ok = (method: string, path: string, op: string) => type.rest.has(op) && options.allowed(method, path.replace("{id}", "id"))
  const reads = { ...accessRefusals(options.bearer, false), 503: ref("responses", "Unavailable") }
  const writes = accessRefusals(options.bearer, true)
  const paths: Record<string, PathItem> = {}
  const add = (path: string, method: string, operation: OperationObject) => {
    paths[path] = { ...paths[path], [method]: { tags: [t], ...operation } }
  }
  if (ok("GET", collection, "list")) {
    add(collection, "get", {
      operationId: `${t}.list`,
      ...describe(`A page of ${t}, filtered and ordered`, type.description),
      parameters: listParameters(type, options.maxPageSize),
      responses: { 200: { description: "a page", content: jsonContent(ref("schemas", `${t}.page`)) }, 400: ref("responses", "BadRequest"), ...reads }
    })
  }
  if (ok("POST", collection, "create")) {
    add(collection, "post", {
      operationId: `${t}.create`,
      ...describe(`Create a row of ${t}`, type.rules.guarded.size ? `${[...type.rules.guarded].join(", ")}: changed by methods only.` : undefined),
      parameters: [ref("parameters", "IdempotencyKey")],
      requestBody: body(`${t}.create`),
      responses: { 201: rowAnswer(t, "created", { Location: ref("headers", "Location") }), ...writeRefusals(true, false, false), ...writes }
    })
  }
  if (ok("GET", item, "get")) {
    add(item, "get", {
      operationId: `${t}.get`,
      summary: `One row of ${t}`,
      responses: { 200: { description: "the row", headers: { ETag: ref("headers", "ETag") }, content: jsonContent(ref("schemas", t)) }, 404: ref("responses", "NotFound"), ...reads }
    })
    add(`${item}/history`, "get", {
      operationId: `${t}.history`,
      summary: `The events of one row of ${t}, oldest first, each with its actor`,
      parameters: [limitParameter(options.maxPageSize), ref("parameters", "Cursor")],
      responses: { 200: { description: "a page of events", content: jsonContent(ref("schemas", "EventPage")) }, 400: ref("responses", "BadRequest"), 404: ref("responses", "NotFound"), ...reads }
    })
  }
  if (ok("PATCH", item, "update")) {
    add(item, "patch", {
      operationId: `${t}.update`,
      summary: `Change some fields of a row of ${t}`,
      parameters: [ref("parameters", "IfMatch"), ref("parameters", "IdempotencyKey")],
      requestBody: body(`${t}.update`),
      responses: { 200: rowAnswer(t, "the row after the change"), ...writeRefusals(true, true, false), ...writes }
    })
  }
  if (ok("DELETE", item, "delete")) {
    add(item, "delete", {
      operationId: `${t}.delete`,
      summary: `Delete a row of ${t}`,
      parameters: [ref("parameters", "IfMatch"), ref("parameters", "IdempotencyKey")],
      responses: {
        200: { description: "deleted, at its final version", headers: { "Idempotent-Replayed": ref("headers", "Idempotent-Replayed") }, content: jsonContent(ref("schemas", "Deleted")) },
        ...writeRefusals(false, true, false),
        ...writes
      }
    })
  }
  for (const m of type.methods.values()) {
    if (!ok("POST", `${item}/${m.name}`, m.name)) continue
    add(`${item}/${m.name}`, "post", {
      operationId: `${t}.${m.name}`,
      ...describe(`Run ${m.name} on a row of ${t}`, m.description),
      parameters: [ref("parameters", "IfMatch"), ref("parameters", "IdempotencyKey")],
      requestBody: body(`${t}.${m.name}`, requiredOf(m.paramsJsonSchema).length > 0),
      responses: { 200: rowAnswer(t, "the row after the method"), ...writeRefusals(true, true, true), ...writes }
    })
  }
  // Every path an operation hangs on names its id once, for all of them.
  for (const [path, pathItem] of Object.entries(paths)) if (path.includes("{id}")) paths[path] = { parameters: [ref("parameters", "Id")], ...pathItem }
  return paths
}

/** The app commands served over REST: their params and paths. */
const commandParts = (catalog: CompiledApp, options: OpenApiOptions) => {
  const schemas: Record<string, JsonSchema> = {}
  const paths: Record<string, PathItem> = {}
  for (const command of catalog.commands.values()) {
    const path = `/api/_commands/${command.name}`
    if (!command.rest || !options.allowed("POST", path)) continue
    schemas[`_commands.${command.name}`] = command.paramsJsonSchema
    paths[path] = {
      post: {
        tags: ["_commands"],
        operationId: `_commands.${command.name}`,
        ...describe(`Run the app command ${command.name}: all its changes or none`, command.description),
        parameters: [ref("parameters", "IdempotencyKey")],
        requestBody: body(`_commands.${command.name}`, requiredOf(command.paramsJsonSchema).length > 0),
        responses: {
          200: { description: "every change it made", headers: { "Idempotent-Replayed": ref("headers", "Idempotent-Replayed") }, content: jsonContent(ref("schemas", "CommandResult")) },
          404: ref("responses", "NotFound"),
          409: ref("responses", "Conflict"),
          ...writeRefusals(true, false, true),
          ...accessRefusals(options.bearer, true)
        }
      }
    }
  }
  return { schemas, paths }
}

/** The views: the list of them, and each one's value. */
const viewParts = (catalog: CompiledApp, options: OpenApiOptions) => {
  const schemas: Record<string, JsonSchema> = {}
  const paths: Record<string, PathItem> = {}
  const reads = accessRefusals(options.bearer, false)
  // The list answers the views the caller may read: shown when there is one.
  const readable = [...catalog.views.values()].filter((view) => options.allowed("GET", `/api/_views/${view.name}`))
  if (readable.length > 0 && options.allowed("GET", "/api/_views")) {
    paths["/api/_views"] = {
      get: {
        tags: ["_views"],
        operationId: "_views",
        summary: "Every view the caller may read, with its value",
        responses: { 200: { description: "the views", content: jsonContent(ref("schemas", "ViewList")) }, ...reads }
      }
    }
  }
  for (const view of readable) {
    if (view.keyed) {
      Object.assign(paths, keyedViewPaths(view, options.maxPageSize, reads))
      Object.assign(schemas, keyedViewSchemas(view))
      continue
    }
    const path = `/api/_views/${view.name}`
    schemas[`_views.${view.name}`] = objectSchema({ name: { const: view.name }, seq: { type: "integer", description: "the log position of its last change" }, value: view.jsonSchema }, ["name", "seq", "value"], false)
    paths[path] = {
      get: {
        tags: ["_views"],
        operationId: `_views.${view.name}`,
        ...describe(`The view ${view.name}`, view.description),
        responses: {
          200: { description: "its value (while its declaration changed and the new one is folded, the older declaration's value, frozen, marked by the WO-View-Version, WO-View-Exact-At, WO-View-Next-Version and WO-View-Next-Failed headers)", headers: { ETag: ref("headers", "ETag") }, content: jsonContent(ref("schemas", `_views.${view.name}`)) },
          500: refused("the view's evolve failed (ViewFailed)"),
          503: refused("the view is being folded again (ViewRefolding)", "Error", { "Retry-After": ref("headers", "Retry-After") }),
          ...reads
        }
      }
    }
  }
  return { schemas, paths }
}

/** A keyed view's entry: `{name, key, seq, value}`, and a page of them. */
const keyedViewSchemas = (view: CompiledView): Record<string, JsonSchema> => {
  const entry = { key: { type: "string" }, seq: { type: "integer", description: "the log position of the entry's last change" }, value: view.jsonSchema }
  return {
    [`_views.${view.name}.entry`]: objectSchema({ name: { const: view.name }, ...entry }, ["name", "key", "seq", "value"], false),
    [`_views.${view.name}.page`]: objectSchema({
      name: { const: view.name },
      items: { type: "array", items: objectSchema(entry, ["key", "seq", "value"], false) },
      nextCursor: { type: "string" }
    }, ["name", "items"], false)
  }
}

/** A keyed view's two routes: a page of entries (filtered and ordered as a row list), and one entry by key. */
const keyedViewPaths = (view: CompiledView, maxPageSize: number, reads: Record<string, unknown>): Record<string, PathItem> => {
  const failures = {
    500: refused("the view's key or evolve failed (ViewFailed)"),
    503: refused("the view is being folded from the log (ViewRefolding)", "Error", { "Retry-After": ref("headers", "Retry-After") })
  }
  return {
    [`/api/_views/${view.name}`]: {
      get: {
        tags: ["_views"],
        operationId: `_views.${view.name}.list`,
        ...describe(`The entries of the keyed view ${view.name}, a page at a time`, view.description),
        parameters: listParameters(entryListable(view), maxPageSize),
        responses: {
          200: { description: "a page of entries (the former declaration's, marked by the WO-View-* headers, while a changed declaration is folded)", content: jsonContent(ref("schemas", `_views.${view.name}.page`)) },
          400: ref("responses", "BadRequest"),
          ...failures,
          ...reads
        }
      }
    },
    [`/api/_views/${view.name}/{key}`]: {
      get: {
        tags: ["_views"],
        operationId: `_views.${view.name}.get`,
        ...describe(`One entry of the keyed view ${view.name}`, view.description),
        parameters: [{ name: "key", in: "path", required: true, schema: { type: "string", minLength: 1 }, description: "the entry's key, percent-encoded" }],
        responses: {
          200: { description: "the entry (while its declaration changed and the new one is folded, the former declaration's entry, frozen, marked by the WO-View-Version, WO-View-Exact-At, WO-View-Next-Version and WO-View-Next-Failed headers)", headers: { ETag: ref("headers", "ETag") }, content: jsonContent(ref("schemas", `_views.${view.name}.entry`)) },
          404: refused("the view holds no entry under this key (NotFound)"),
          ...failures,
          ...reads
        }
      }
    }
  }
}

/** `GET /api/_events`: the log over Server-Sent Events (open to every principal: it keeps the types each may read). */
const eventPaths = (options: OpenApiOptions): Record<string, PathItem> =>
  options.allowed("GET", "/api/_events")
    ? {
      "/api/_events": {
        get: {
          tags: ["_events"],
          operationId: "_events",
          summary: "The event log as Server-Sent Events: replayed from `from`, then live",
          description: "Each event is `id: <seq>` and `data: <Event JSON>` (see the Event schema).",
          parameters: [
            { name: "from", in: "query", schema: { type: "integer", minimum: 1, default: 1 }, description: "the first sequence to send" },
            { name: "actor", in: "query", schema: { type: "string", minLength: 1 }, description: "only the events this principal made" },
            { name: "Last-Event-ID", in: "header", schema: { type: "string" }, description: "resume after this sequence (wins over from)" }
          ],
          responses: {
            200: { description: "the stream", content: { "text/event-stream": { schema: { type: "string" } } } },
            400: ref("responses", "BadRequest"),
            429: refused("too many open readers (TooManyReaders)", "Error", { "Retry-After": ref("headers", "Retry-After") }),
            ...accessRefusals(options.bearer, false)
          }
        }
      }
    }
    : {}

/** The probes: open to anyone, no credential. */
const HEALTH_PATHS: Record<string, PathItem> = Object.fromEntries(
  [["/healthz", "the process is up"], ["/livez", "the process is up"], ["/readyz", "ready to serve: the store is reachable"]].map(([path, what]) => [path, {
    get: {
      tags: ["health"],
      operationId: path.slice(1),
      summary: what,
      security: [],
      responses: { 200: { description: what, content: jsonContent(ANY_OBJECT) }, 503: { description: "not ready", content: jsonContent(ANY_OBJECT) } }
    }
  }])
)

/** The OpenAPI 3.1 document of the app's REST API, as `options.allowed` lets its caller use it. */
export const openApiDocument = (catalog: CompiledApp, options: OpenApiOptions): JsonSchema => {
  const schemas: Record<string, JsonSchema> = { ...SCHEMAS }
  const paths: Record<string, PathItem> = {}
  for (const type of catalog.types.values()) {
    const typed = typePaths(type, options)
    if (Object.keys(typed).length === 0) continue
    Object.assign(paths, typed)
    Object.assign(schemas, typeSchemas(type))
  }
  const commands = commandParts(catalog, options)
  const views = viewParts(catalog, options)
  Object.assign(paths, commands.paths, views.paths, eventPaths(options), HEALTH_PATHS)
  Object.assign(schemas, commands.schemas, views.schemas)
  return {
    openapi: "3.1.0",
    info: {
      title: catalog.name,
      version: VERSION,
      description: `${catalog.description ? `${catalog.description}\n\n` : ""}The REST API of the writeonce app ${catalog.name}. Errors are JSON: {"error": "<Tag>", "message": "..."}.`
    },
    paths,
    components: {
      schemas,
      responses: RESPONSES,
      parameters: PARAMETERS,
      headers: HEADERS,
      ...(options.bearer ? { securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "WO_AUTH_TOKEN, a principal's token from the access file, or an OAuth access token" } } } : {})
    },
    ...(options.bearer ? { security: [{ bearer: [] }] } : {})
  }
}

// --- The route -----------------------------------------------------------------------------------------------------

const HEADERS_OUT = { "cache-control": "no-store" }

/**
 * `GET /api/_openapi.json`, answered for the request's principal. The document is made once per principal (the
 * catalog of a running server does not change; a reloaded access file makes new principals) or once in all
 * without access.
 */
export const makeOpenApiRoute = (catalog: CompiledApp, maxPageSize: number, access: AccessShape) => {
  const made = new WeakMap<Principal, string>()
  let open: string | undefined
  const documentFor = (principal: Principal | undefined) =>
    JSON.stringify(openApiDocument(catalog, {
      maxPageSize,
      bearer: access.required,
      allowed: (method, path) => {
        const op = requestOperation(method, path, METRICS_PATH)
        return op === undefined || op === ANY || may(principal, op)
      }
    }))
  return (request: EdgeRequest): Effect.Effect<EdgeResponse> | undefined => {
    if (request.path !== OPENAPI_PATH) return undefined
    if (request.method !== "GET") return Effect.succeed(errorJson(405, "MethodNotAllowed", "GET only", {}, { allow: "GET, HEAD" }))
    return Effect.sync(() => {
      const principal = request.principal
      if (principal === undefined) return jsonText(200, (open ??= documentFor(undefined)), HEADERS_OUT)
      let text = made.get(principal)
      if (text === undefined) made.set(principal, (text = documentFor(principal)))
      return jsonText(200, text, HEADERS_OUT)
    })
  }
}
