/**
 * MCP tools generated from the catalog: `<type>_list|get|create|update|delete` and `<type>_<method>`, exposed
 * per the type's `mcp` list (else its `rest` list). Every call goes through the same Commands and Queries as
 * REST, so results carry the very bytes a REST GET would (C9) and failures the same messages (C7).
 */
import { Effect, Either, ParseResult, Schema } from "effect"
import type { Row } from "../../domain/catalog.ts"
import type { CompiledApp, CompiledType } from "../../domain/compile.ts"
import { andMore, ValidationFailed, type CommandError, type NotFound } from "../../domain/errors.ts"
import { issuesOf } from "../../domain/codecs.ts"
import { toJsonSchema, withoutProperties, type JsonSchema } from "../../domain/json-schema.ts"
import type { Command, CommandsShape, Committed, ExecuteOptions } from "../../commands/commands.ts"
import type { QueriesShape } from "../../projections/queries.ts"
import { deletedBody, listBody, viewBody } from "../bodies.ts"
import type { CompiledView } from "../../domain/compile-views.ts"
import { ViewFailed, type ViewsShape } from "../../projections/views.ts"
import { fromArguments, orderChoices } from "../../domain/list-request.ts"
import { commandBody } from "../command-body.ts"
import { IDEMPOTENT_REPLAY_META } from "../../commands/idempotency.ts"

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

/** A tools/call result (C7: failures are results with isError, not protocol errors). */
export type CallToolResult = {
  readonly content: ReadonlyArray<{ readonly type: "text"; readonly text: string }>
  readonly structuredContent?: unknown
  readonly isError?: boolean
  readonly _meta?: Readonly<Record<string, unknown>>
}

/**
 * A tool's answer: the result, and, when the tool could make it without serialising the row again, the
 * result's JSON text (a row's JSON is made once and is both the text content and the structuredContent).
 */
export interface ToolResult {
  readonly result: CallToolResult
  readonly json?: string
}

export interface Tool {
  readonly definition: ToolDefinition
  readonly call: (args: Readonly<Record<string, unknown>>, options: ExecuteOptions) => Effect.Effect<ToolResult>
}

const success = (text: string, structuredContent: unknown): ToolResult => ({ result: { content: [{ type: "text", text }], structuredContent } })
/** The `_meta` key of a tool result refused by the domain: `{error: "Rejected", code, message}`. */
export const REFUSAL_META = "writeonce/refusal"

const failure = (error: CommandError | NotFound | ValidationFailed): ToolResult => ({
  result: error._tag === "IdempotencyKeyReused"
    ? { content: [{ type: "text", text: error.message }], isError: true, _meta: { [REFUSAL_META]: { error: error._tag, key: error.key, message: error.message } } }
    : error._tag === "Rejected"
    // The domain's refusal carries its code, as REST's 422 body does, for an agent to branch on. In `_meta`, not
    // `structuredContent`: SDK v1's client checks structuredContent against the tool's outputSchema (the row)
    // even on an isError result, and would throw instead of returning the refusal.
    ? { content: [{ type: "text", text: error.message }], isError: true, _meta: { [REFUSAL_META]: { error: error._tag, code: error.code, message: error.message } } }
    : { content: [{ type: "text", text: error.message }], isError: true }
})
/**
 * A write's answer given again for a retried idempotency key: the same result, flagged in `_meta`. Without the
 * prepared JSON text (which carries no `_meta`), so that each era adds its own `_meta` beside the flag.
 */
const asReplay = (answer: ToolResult): ToolResult => ({ result: { ...answer.result, _meta: { ...answer.result._meta, [IDEMPOTENT_REPLAY_META]: true } } })

/** Hot path (bench: MCP get): the row is serialised once, or not at all when the store already did it. */
const rowResult = (row: Row, rowJson: string = JSON.stringify(row)): ToolResult => ({
  result: { content: [{ type: "text", text: rowJson }], structuredContent: row },
  json: `{"content":[{"type":"text","text":${JSON.stringify(rowJson)}}],"structuredContent":${rowJson}}`
})

// The arguments and results every type's tools share, as Effect Schemas: arguments are decoded with them and
// the tools' JSON Schemas are derived from them (wireSchema), so the two cannot disagree.
const Id = Schema.String.pipe(Schema.minLength(1)).annotations({ description: "the row's id" })
const ExpectedVersion = Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1))
  .annotations({ description: "fail with a conflict unless the row is at this version" })
const Version = Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1)).annotations({ description: "the row's version: 1 when created, one more per change" })
const Target = Schema.Struct({ id: Id, expectedVersion: Schema.optional(ExpectedVersion) })
const IdOnly = Schema.Struct({ id: Id })
const RowKeys = Schema.Struct({ id: Id, version: Version })
const Deleted = Schema.Struct({ id: Id, version: Schema.Number.pipe(Schema.int()).annotations({ description: "the row's final version" }), deleted: Schema.Boolean })
/** `where` and `order` are checked against the catalog afterwards (domain/list-request.ts). */
const pageArgs = (maxPageSize: number) =>
  Schema.Struct({
    cursor: Schema.optional(Schema.String.annotations({ description: "nextCursor from the previous page (of the same where and order)" })),
    limit: Schema.optional(Schema.Number.pipe(
      Schema.int(),
      Schema.between(1, maxPageSize, { message: () => `must be an integer from 1 to ${maxPageSize}` })
    ).annotations({ description: "rows per page" })),
    where: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
    order: Schema.optional(Schema.String)
  })
/** No arguments at all: `{}` (an empty Struct lets any key through, so the keys are checked too). */
const NoArguments = Schema.Struct({}).pipe(Schema.filter((args) => Object.keys(args).length === 0 || `takes no arguments, got ${Object.keys(args).join(", ")}`))

const decodeTarget = Schema.decodeUnknownEither(Target)
const decodeIdOnly = Schema.decodeUnknownEither(IdOnly, { onExcessProperty: "error" })
const decodeTargetOnly = Schema.decodeUnknownEither(Target, { onExcessProperty: "error" })
const decodeNoArguments = Schema.decodeUnknownEither(NoArguments)

/**
 * `{id: "<non-empty string>"}` and nothing else, recognised by hand with IdOnly's rules. Hot path (bench: the
 * Schema decode was the largest part of an MCP get's own time); anything else goes through decodeIdOnly, which
 * also words the errors. An own `__proto__` key is another key, so it takes the Schema path and is refused.
 */
const plainId = (args: Readonly<Record<string, unknown>>): string | undefined => {
  for (const key in args) if (key !== "id") return undefined
  const id = args.id
  return typeof id === "string" && id.length > 0 ? id : undefined
}

/** Bounded as every ValidationFailed is (errors.ts): at most MAX_ISSUES issues, each clipped, the rest counted. */
const argumentError = (type: string, error: ParseResult.ParseError): ToolResult => {
  const issues = new ValidationFailed({ type, issues: issuesOf(error) })
  const listed = issues.issues.map((i) => `${i.path.join(".") || "arguments"}: ${i.message}`).join("; ")
  return {
    result: {
      content: [{ type: "text", text: `invalid ${type}: ${listed}${andMore(issues.omitted)}` }],
      isError: true
    }
  }
}

const propertiesOf = (schema: JsonSchema) => (schema.properties ?? {}) as Record<string, JsonSchema>
const requiredOf = (schema: JsonSchema) => (schema.required ?? []) as ReadonlyArray<string>

/** Drops the titles Effect gives refinements by default (`int`, `minLength(1)`): they are not for readers. */
const untitled = (schema: JsonSchema): JsonSchema => {
  const { title: _title, ...rest } = schema
  return rest
}

/**
 * An object's JSON Schema as tools carry it, from its properties (each derived from an Effect Schema, or the
 * catalog's own JSON Schema of a field): `required` only when non-empty; closed for arguments (unknown keys are
 * refused), open for results.
 */
const objectSchema = (properties: Record<string, unknown>, required: ReadonlyArray<string>, closed = true): JsonSchema => ({
  type: "object",
  properties,
  ...(required.length ? { required } : {}),
  ...(closed ? { additionalProperties: false } : {})
})

/** The properties and required keys of a Struct's derived JSON Schema. */
const derived = (schema: Schema.Schema.Any) => {
  const json = toJsonSchema(schema)
  return {
    properties: Object.fromEntries(Object.entries(propertiesOf(json)).map(([k, v]) => [k, untitled(v)])),
    required: requiredOf(json)
  }
}

const TARGET = derived(Target)
const ID_ONLY = derived(IdOnly)
const ROW_KEYS = derived(RowKeys)
const DELETED = derived(Deleted)

/**
 * Properties without their `default`: a field's default applies when a row is created, never to a filter or to a
 * change (a client that fills defaults into a form must not reset a field on update).
 */
const withoutDefaults = (properties: Record<string, JsonSchema>): Record<string, JsonSchema> =>
  Object.fromEntries(Object.entries(properties).map(([name, { default: _default, ...property }]) => [name, property]))

/**
 * The list tool's `where` and `order` properties, from the catalog: `where` has one property per filterable
 * field, with that field's own JSON Schema; `order` names each filterable field, ascending or with `-`.
 */
export const listFilterSchemas = (type: CompiledType): Record<string, JsonSchema> => {
  const properties = withoutDefaults(propertiesOf(type.fieldsJsonSchema))
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
          if (snapshot.failed !== undefined) return { result: { content: [{ type: "text", text: new ViewFailed({ name: view.name, reason: snapshot.failed }).message }], isError: true } }
          const body = viewBody(snapshot)
          return success(body, JSON.parse(body))
        }
      }))
})

const typeTools = (type: CompiledType, commands: CommandsShape, queries: QueriesShape, maxPageSize: number): Array<Tool> => {
  const t = type.name
  const fields = type.fieldsJsonSchema
  // What a create or update may set: guarded fields are changed by methods only.
  const input = withoutProperties(fields, type.rules.guarded)
  const guardedNote = type.rules.guarded.size === 0 ? "" : ` ${[...type.rules.guarded].join(", ")}: changed by methods only.`
  const rowSchema = objectSchema({ ...ROW_KEYS.properties, ...propertiesOf(fields) }, [...ROW_KEYS.required, ...requiredOf(fields)], false)
  const PageArgs = pageArgs(maxPageSize)
  const PAGE = derived(PageArgs)
  const decodePageArgs = Schema.decodeUnknownEither(PageArgs, { onExcessProperty: "error" })
  const about = type.description ? ` ${type.description}` : ""
  const tools: Array<Tool> = []
  const execute = (command: Command, options: ExecuteOptions, onSuccess: (c: Committed) => ToolResult) =>
    commands.execute(command, options).pipe(Effect.match({ onFailure: failure, onSuccess: (c) => (c.replayed ? asReplay(onSuccess(c)) : onSuccess(c)) }))
  const committedRow = (c: Committed) => rowResult(c.row!, c.rowJson ?? undefined)

  if (type.mcp.has("list")) {
    tools.push({
      definition: {
        name: `${t}_list`,
        title: `List ${t}`,
        description: `List ${t} rows, a page at a time; pass the returned nextCursor to continue. ` +
          `Filter with where (field equals value; several fields: all must match) and sort with order ("title", "-title"; default id).${about}`,
        inputSchema: objectSchema({ cursor: PAGE.properties.cursor, limit: PAGE.properties.limit, ...listFilterSchemas(type) }, []),
        outputSchema: objectSchema({ items: { type: "array", items: rowSchema }, nextCursor: { type: "string" } }, ["items"], false),
        annotations: { title: `List ${t}`, readOnlyHint: true, openWorldHint: false }
      },
      call: (args) =>
        // `where` as parsed: the decoded copy has lost any own `__proto__` key (list-request.ts).
        Either.match(Either.flatMap(Either.mapLeft(decodePageArgs(args), (e) => argumentError(t, e)), (page) =>
          Either.mapLeft(fromArguments(type, { ...page, ...(page.where !== undefined ? { where: args.where as Readonly<Record<string, unknown>> } : {}) }), failure)), {
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
    const onRead = { onFailure: failure, onSuccess: (row: Row) => rowResult(row) }
    const read = (id: string) => Effect.match(queries.get(t, id), onRead)
    tools.push({
      definition: {
        name: `${t}_get`,
        title: `Get one of ${t}`,
        description: `Get one row of ${t} by id (the same JSON as GET /api/${t}/<id>).${about}`,
        inputSchema: objectSchema(ID_ONLY.properties, ID_ONLY.required),
        outputSchema: rowSchema,
        annotations: { title: `Get one of ${t}`, readOnlyHint: true, openWorldHint: false }
      },
      call: (args) => {
        const id = plainId(args)
        return id !== undefined
          ? read(id)
          : Either.match(decodeIdOnly(args), { onLeft: (e) => Effect.succeed(argumentError(t, e)), onRight: ({ id }) => read(id) })
      }
    })
  }
  if (type.mcp.has("create")) {
    tools.push({
      definition: {
        name: `${t}_create`,
        title: `Create one of ${t}`,
        description: `Create a row in ${t}; the store assigns its id. Answered once the write is durable.${about}`,
        inputSchema: input,
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
        description: `Change some fields of a row in ${t}. Pass expectedVersion to refuse the change if someone else changed the row first.${guardedNote}`,
        inputSchema: objectSchema({ ...TARGET.properties, ...withoutDefaults(propertiesOf(input)) }, TARGET.required),
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
        inputSchema: objectSchema(TARGET.properties, TARGET.required),
        outputSchema: objectSchema(DELETED.properties, DELETED.required, false),
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
        inputSchema: objectSchema({ ...TARGET.properties, ...propertiesOf(params) }, [...TARGET.required, ...requiredOf(params)]),
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

// --- App commands (commands across entity types) ---------------------------------------------------------------

const COMMAND_RESULT: JsonSchema = objectSchema({
  command: { type: "string" },
  correlation: { type: "string", description: "one id for this execution, on each of its events in the log" },
  changes: {
    type: "array",
    description: "one per event the command wrote, in order: the row after it (null for a delete)",
    items: objectSchema({
      type: { type: "string" },
      id: { type: "string" },
      kind: { type: "string", enum: ["created", "updated", "deleted", "invoked"] },
      version: { type: "integer", minimum: 1 },
      row: { anyOf: [{ type: "object" }, { type: "null" }] }
    }, ["type", "id", "kind", "version", "row"], false)
  }
}, ["command", "correlation", "changes"], false)

/**
 * The tool `<name>` of each app command served over MCP: its params as arguments, its answer the same JSON as
 * `POST /api/_commands/<name>` (command-body.ts), a refusal the same isError result as a method's.
 */
export const makeCommandTools = (catalog: CompiledApp, commands: CommandsShape): ReadonlyArray<Tool> =>
  [...catalog.commands.values()].filter((c) => c.mcp).map((command): Tool => {
    const params = command.paramsJsonSchema
    return {
      definition: {
        name: command.name,
        title: command.name,
        description: `${command.description ?? `Run the command ${command.name}.`} All of its changes are written atomically, or none.`,
        inputSchema: objectSchema(propertiesOf(params), requiredOf(params)),
        outputSchema: COMMAND_RESULT,
        annotations: { title: command.name, readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
      },
      call: (args, options) =>
        commands.executeAppCommand(command.name, args, options).pipe(
          Effect.match({
            onFailure: failure,
            onSuccess: (c) => {
              const body = commandBody(c)
              const answer = { ...success(body, JSON.parse(body)), json: `{"content":[{"type":"text","text":${JSON.stringify(body)}}],"structuredContent":${body}}` }
              return c.replayed ? asReplay(answer) : answer
            }
          })
        )
    }
  })
