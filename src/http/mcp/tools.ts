/**
 * MCP tools generated from the catalog: `<type>_list|get|create|update|delete` and `<type>_<method>`, exposed
 * per the type's `mcp` list (else its `rest` list). Every call goes through the same Commands and Queries as
 * REST, so results carry the very bytes a REST GET would (C9) and failures the same messages (C7).
 */
import { Effect, Either, ParseResult, Schema } from "effect"
import type { Row } from "../../domain/catalog.ts"
import type { CompiledApp, CompiledType } from "../../domain/compile.ts"
import type { CommandError, NotFound, ValidationFailed } from "../../domain/errors.ts"
import type { JsonSchema } from "../../domain/json-schema.ts"
import type { Command, CommandsShape, ExecuteOptions } from "../../commands/commands.ts"
import type { Committed } from "../../commands/group-commit.ts"
import type { QueriesShape } from "../../projections/queries.ts"
import { deletedBody } from "../rest.ts"
import { listBody, viewBody } from "../bodies.ts"
import type { CompiledView } from "../../domain/compile-views.ts"
import { ViewFailed, type ViewsShape } from "../../projections/views.ts"
import { fromArguments, orderChoices } from "../../domain/list-request.ts"

export interface ToolAnnotations {
  readonly title: string
  readonly readOnlyHint?: boolean
  readonly destructiveHint?: boolean
  readonly idempotentHint?: boolean
  readonly openWorldHint?: boolean
}

export interface ToolDefinition {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly inputSchema: JsonSchema
  readonly outputSchema: JsonSchema
  readonly annotations: ToolAnnotations
}

/** A tool's outcome: a result (C7: failures are results with isError, not protocol errors). */
export interface ToolResult {
  readonly content: ReadonlyArray<{ readonly type: "text"; readonly text: string }>
  readonly structuredContent?: unknown
  readonly isError?: boolean
}

export interface Tool {
  readonly definition: ToolDefinition
  readonly call: (args: Readonly<Record<string, unknown>>, options: ExecuteOptions) => Effect.Effect<ToolResult>
}

const success = (text: string, structuredContent: unknown): ToolResult => ({ content: [{ type: "text", text }], structuredContent })
const failure = (error: CommandError | NotFound | ValidationFailed): ToolResult => ({
  content: [{ type: "text", text: error.message }],
  isError: true
})
const rowResult = (row: Row) => success(JSON.stringify(row), row)

const Target = Schema.Struct({
  id: Schema.String.pipe(Schema.minLength(1)),
  expectedVersion: Schema.optional(Schema.Int.pipe(Schema.greaterThanOrEqualTo(1)))
})
const decodeTarget = Schema.decodeUnknownEither(Target)
const PageArgs = Schema.Struct({
  cursor: Schema.optional(Schema.String),
  limit: Schema.optional(Schema.Int),
  where: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  order: Schema.optional(Schema.String)
})
const decodePageArgs = Schema.decodeUnknownEither(PageArgs, { onExcessProperty: "error" })
const decodeIdOnly = Schema.decodeUnknownEither(Schema.Struct({ id: Target.fields.id }), { onExcessProperty: "error" })
const decodeTargetOnly = Schema.decodeUnknownEither(Target, { onExcessProperty: "error" })

const argumentError = (type: string, error: ParseResult.ParseError): ToolResult => ({
  content: [{
    type: "text",
    text: `invalid ${type}: ` +
      ParseResult.ArrayFormatter.formatErrorSync(error).map((i) => `${i.path.join(".") || "arguments"}: ${i.message}`).join("; ")
  }],
  isError: true
})

const ID_SCHEMA = { type: "string", description: "the row's id" }
const EXPECTED_VERSION_SCHEMA = { type: "integer", minimum: 1, description: "fail with a conflict unless the row is at this version" }

const objectSchema = (properties: Record<string, unknown>, required: ReadonlyArray<string>, closed = true): JsonSchema => ({
  type: "object",
  properties,
  ...(required.length ? { required } : {}),
  ...(closed ? { additionalProperties: false } : {})
})

const propertiesOf = (schema: JsonSchema) => (schema.properties ?? {}) as Record<string, unknown>
const requiredOf = (schema: JsonSchema) => (schema.required ?? []) as ReadonlyArray<string>

/**
 * The list tool's `where` and `order` properties, from the catalog: `where` has one property per filterable
 * field, with that field's own JSON Schema; `order` names each filterable field, ascending or with `-`.
 */
export const listFilterSchemas = (type: CompiledType): Record<string, JsonSchema> => {
  const properties = propertiesOf(type.fieldsJsonSchema)
  const filterable = [...type.filterable.keys()]
  return {
    where: {
      ...objectSchema(Object.fromEntries(filterable.map((f) => [f, properties[f] ?? {}])), []),
      description: "only rows whose fields equal these values (all of them)"
    },
    order: { type: "string", enum: [...orderChoices(type)], description: "sort by a field, \"-\" for descending; default id" }
  }
}

/** All tools of the app, in a deterministic order: types in catalog order, then list, get, create, update, delete, methods. */
export const makeTools = (
  catalog: CompiledApp,
  commands: CommandsShape,
  queries: QueriesShape,
  maxPageSize: number,
  views?: ViewsShape
): ReadonlyArray<Tool> => {
  const tools: Array<Tool> = []
  for (const type of catalog.types.values()) tools.push(...typeTools(type, commands, queries, maxPageSize))
  if (views !== undefined) for (const view of catalog.views.values()) tools.push(viewTool(view, views))
  return tools
}

/** No arguments at all: `{}` (an empty Struct lets any key through, so the keys are checked too). */
const decodeNoArguments = Schema.decodeUnknownEither(
  Schema.Struct({}).pipe(Schema.filter((args) => Object.keys(args).length === 0 || `takes no arguments, got ${Object.keys(args).join(", ")}`))
)

/** `view_<name>`: a view's value, the same JSON as `GET /api/_views/<name>` and the resource `wo://views/<name>`. */
const viewTool = (view: CompiledView, views: ViewsShape): Tool => ({
  definition: {
    name: `view_${view.name}`,
    title: `View ${view.name}`,
    description: `${view.description ? `${view.description} ` : ""}The current value of the view ${view.name}, maintained on every ` +
      `commit (the same JSON as GET /api/_views/${view.name}; subscribe to wo://views/${view.name} to hear when it changes).`,
    inputSchema: objectSchema({}, []),
    outputSchema: objectSchema({
      name: { type: "string" },
      seq: { type: "integer", minimum: 0, description: "the log sequence of the value's last change" },
      value: view.jsonSchema
    }, ["name", "seq", "value"], false),
    annotations: { title: `View ${view.name}`, readOnlyHint: true, openWorldHint: false }
  },
  call: (args) =>
    Effect.sync(() =>
      Either.match(decodeNoArguments(args), {
        onLeft: (e) => argumentError(`view ${view.name}`, e),
        onRight: (): ToolResult => {
          const snapshot = views.get(view.name)!
          if (snapshot.failed !== undefined) return { content: [{ type: "text", text: new ViewFailed({ name: view.name, reason: snapshot.failed }).message }], isError: true }
          const body = viewBody(snapshot)
          return success(body, JSON.parse(body))
        }
      }))
})

const typeTools = (type: CompiledType, commands: CommandsShape, queries: QueriesShape, maxPageSize: number): Array<Tool> => {
  const t = type.name
  const fields = type.fieldsJsonSchema
  const rowSchema = objectSchema({ id: ID_SCHEMA, version: { type: "integer", minimum: 1 }, ...propertiesOf(fields) }, ["id", "version", ...requiredOf(fields)], false)
  const about = type.description ? ` ${type.description}` : ""
  const tools: Array<Tool> = []
  const execute = (command: Command, options: ExecuteOptions, onSuccess: (c: Committed) => ToolResult) =>
    commands.execute(command, options).pipe(Effect.match({ onFailure: failure, onSuccess }))
  const committedRow = (c: Committed) => success(c.rowJson ?? JSON.stringify(c.row), c.row)

  if (type.mcp.has("list")) {
    tools.push({
      definition: {
        name: `${t}_list`,
        title: `List ${t}`,
        description: `List ${t} rows, a page at a time; pass the returned nextCursor to continue. ` +
          `Filter with where (field equals value; several fields: all must match) and sort with order ("title", "-title"; default id).${about}`,
        inputSchema: objectSchema({
          cursor: { type: "string", description: "nextCursor from the previous page (of the same where and order)" },
          limit: { type: "integer", minimum: 1, maximum: maxPageSize, description: "rows per page" },
          ...listFilterSchemas(type)
        }, []),
        outputSchema: objectSchema({ items: { type: "array", items: rowSchema }, nextCursor: { type: "string" } }, ["items"], false),
        annotations: { title: `List ${t}`, readOnlyHint: true, openWorldHint: false }
      },
      call: (args) =>
        Either.match(Either.flatMap(Either.mapLeft(decodePageArgs(args), (e) => argumentError(t, e)), (page) =>
          Either.mapLeft(fromArguments(type, page), failure)), {
          onLeft: (result) => Effect.succeed(result),
          onRight: (page) =>
            queries.list(t, page).pipe(
              Effect.match({
                onFailure: failure,
                onSuccess: (p) => success(listBody(p), p.nextCursor ? { items: p.items, nextCursor: p.nextCursor } : { items: p.items })
              })
            )
        })
    })
  }
  if (type.mcp.has("get")) {
    tools.push({
      definition: {
        name: `${t}_get`,
        title: `Get one of ${t}`,
        description: `Get one row of ${t} by id (the same JSON as GET /api/${t}/<id>).${about}`,
        inputSchema: objectSchema({ id: ID_SCHEMA }, ["id"]),
        outputSchema: rowSchema,
        annotations: { title: `Get one of ${t}`, readOnlyHint: true, openWorldHint: false }
      },
      call: (args) =>
        Either.match(decodeIdOnly(args), {
          onLeft: (e) => Effect.succeed(argumentError(t, e)),
          onRight: ({ id }) => queries.get(t, id).pipe(Effect.match({ onFailure: failure, onSuccess: rowResult }))
        })
    })
  }
  if (type.mcp.has("create")) {
    tools.push({
      definition: {
        name: `${t}_create`,
        title: `Create one of ${t}`,
        description: `Create a row in ${t}; the store assigns its id. Answered once the write is durable.${about}`,
        inputSchema: fields,
        outputSchema: rowSchema,
        annotations: { title: `Create one of ${t}`, readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
      },
      call: (args, options) => execute({ _tag: "Create", type: t, input: args }, options, committedRow)
    })
  }
  if (type.mcp.has("update")) {
    tools.push({
      definition: {
        name: `${t}_update`,
        title: `Update one of ${t}`,
        description: `Change some fields of a row in ${t}. Pass expectedVersion to refuse the change if someone else changed the row first.`,
        inputSchema: objectSchema({ id: ID_SCHEMA, expectedVersion: EXPECTED_VERSION_SCHEMA, ...propertiesOf(fields) }, ["id"]),
        outputSchema: rowSchema,
        annotations: { title: `Update one of ${t}`, readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
      },
      call: (args, options) => targeted(t, args, (id, expectedVersion, input) =>
        execute({ _tag: "Update", type: t, id, expectedVersion, input }, options, committedRow))
    })
  }
  if (type.mcp.has("delete")) {
    tools.push({
      definition: {
        name: `${t}_delete`,
        title: `Delete one of ${t}`,
        description: `Delete a row of ${t} by id. The log keeps its history.`,
        inputSchema: objectSchema({ id: ID_SCHEMA, expectedVersion: EXPECTED_VERSION_SCHEMA }, ["id"]),
        outputSchema: objectSchema({ id: ID_SCHEMA, version: { type: "integer" }, deleted: { type: "boolean" } }, ["id", "version", "deleted"], false),
        annotations: { title: `Delete one of ${t}`, readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false }
      },
      call: (args, options) =>
        Either.match(decodeTargetOnly(args), {
          onLeft: (e) => Effect.succeed(argumentError(t, e)),
          onRight: ({ id, expectedVersion }) =>
            execute({ _tag: "Delete", type: t, id, expectedVersion }, options, ({ event }) => {
              const body = deletedBody(event)
              return success(JSON.stringify(body), body)
            })
        })
    })
  }
  for (const method of type.methods.values()) {
    if (!type.mcp.has(method.name)) continue
    const params = method.paramsJsonSchema
    tools.push({
      definition: {
        name: `${t}_${method.name}`,
        title: `${method.name} on ${t}`,
        description: `${method.description ?? `Run ${method.name} on a row of ${t}.`} Pass expectedVersion to refuse it if the row changed first.`,
        inputSchema: objectSchema({ id: ID_SCHEMA, expectedVersion: EXPECTED_VERSION_SCHEMA, ...propertiesOf(params) }, ["id", ...requiredOf(params)]),
        outputSchema: rowSchema,
        annotations: { title: `${method.name} on ${t}`, readOnlyHint: false, destructiveHint: false, openWorldHint: false }
      },
      call: (args, options) => targeted(t, args, (id, expectedVersion, input) =>
        execute({ _tag: "Invoke", type: t, id, method: method.name, expectedVersion, input }, options, committedRow))
    })
  }
  return tools
}

/** Splits `{id, expectedVersion?, ...rest}` arguments, validating the first two through Schema. */
const targeted = (
  type: string,
  args: Readonly<Record<string, unknown>>,
  f: (id: string, expectedVersion: number | undefined, rest: unknown) => Effect.Effect<ToolResult>
): Effect.Effect<ToolResult> =>
  Either.match(decodeTarget(args), {
    onLeft: (e) => Effect.succeed(argumentError(type, e)),
    onRight: ({ id, expectedVersion }) => {
      const { id: _id, expectedVersion: _v, ...rest } = args
      return f(id, expectedVersion, rest)
    }
  })
