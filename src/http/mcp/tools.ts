/**
 * MCP tools generated from the catalog: `<type>_list|get|create|update|delete` and `<type>_<method>`, exposed
 * per the type's `mcp` list (else its `rest` list), then `view_<name>` (and `view_<name>_list` for a keyed view) and one
 * tool per app command. Every call
 * goes through the same Commands and Queries as REST, so results carry the very bytes a REST GET would and
 * failures the same messages.
 *
 * A type's tools come from one table of operations: each says its texts, its annotations, its arguments and
 * result, and either how it reads or which command its arguments make. `toolNames(type)` reads the same table.
 */
import { Cause, Effect, Either, Schema } from "effect"
import type { CompiledApp, CompiledMethod, CompiledType } from "../../domain/compile.ts"
import type { CompiledView } from "../../domain/compile-views.ts"
import { withoutProperties, type JsonSchema } from "../../domain/json-schema.ts"
import { fromArguments, type ListRequest } from "../../domain/list-request.ts"
import type { Command, CommandsShape, Committed, ExecuteOptions } from "../../commands/commands.ts"
import { noCancel } from "../../support/no-cancel.ts"
import { Op, type Operation as Granted } from "../../access/grants.ts"
import { answerExit } from "../../commands/exit-answer.ts"
import { NotFound, type CommandError, type ValidationFailed } from "../../domain/errors.ts"
import type { Page, QueriesShape } from "../../projections/queries.ts"
import { ViewFailed, ViewRefolding, type ViewsShape } from "../../projections/views/views.ts"
import { deletedBody, listBody, viewBody } from "../rest/bodies.ts"
import type { KeyedViewsShape } from "../../projections/views/keyed-views.ts"
import { keyedViewTools } from "./keyed-view-tools.ts"
import { commandBody } from "../rest/command-body.ts"
import { argumentError, asReplay, errorResult, failure, jsonResult, readRowResult, rowResult, success, type ToolResult } from "./tool-results.ts"
import {
  COMMAND_RESULT,
  decodeIdOnly,
  decodeNoArguments,
  decodeTarget,
  decodeTargetOnly,
  DELETED,
  derived,
  ID_ONLY,
  listFilterSchemas,
  objectSchema,
  orderSentence,
  pageArgs,
  plainId,
  plainTarget,
  propertiesOf,
  requiredOf,
  ROW_KEYS,
  TARGET,
  withoutDefaults
} from "./tool-schemas.ts"

export type { CallToolResult, ToolResult } from "./tool-results.ts"
export { REFUSAL_META } from "./tool-results.ts"

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

/** How a call made without a fiber answers (`Tool.callNow`): once, with its result, or with a defect of ours. */
export interface ToolReply {
  readonly result: (result: ToolResult) => void
  readonly died: (cause: Cause.Cause<unknown>) => void
}

export interface Tool {
  readonly definition: ToolDefinition
  /** What calling it asks (grants.ts): tools/list shows it, and tools/call runs it, only where it is granted. */
  readonly operation: Granted
  readonly call: (args: Readonly<Record<string, unknown>>, options: ExecuteOptions) => Effect.Effect<ToolResult>
  /**
   * `call` without a fiber, for a call without an idempotency key or progress (the direct /mcp route:
   * transport.ts): a read answers before it returns (a store failure is thrown, as a defect), a row write from the
   * writer's batch. Returns what cancels the write if the writer has not taken it. Absent on the tools that only
   * have `call` (lists, app commands).
   */
  readonly callNow?: (args: Readonly<Record<string, unknown>>, reply: ToolReply, options: ExecuteOptions) => () => void
}

type Hints = Omit<ToolAnnotations, "title">
const READS: Hints = { readOnlyHint: true, openWorldHint: false }
const WRITES: Hints = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
const DELETES: Hints = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false }
/** A method may or may not be idempotent: no hint. */
const RUNS: Hints = { readOnlyHint: false, destructiveHint: false, openWorldHint: false }

interface Texts {
  readonly title: string
  readonly description: string
}

const definition = (name: string, texts: Texts, inputSchema: JsonSchema, outputSchema: JsonSchema, hints: Hints): ToolDefinition => ({
  name,
  title: texts.title,
  description: texts.description,
  inputSchema,
  outputSchema,
  annotations: { title: texts.title, ...hints }
})

/** What a type's operations are made from, once per type. */
interface TypeParts {
  readonly type: CompiledType
  readonly t: string
  /** The type's description, as a sentence to append (or nothing). */
  readonly about: string
  /** What a create or update may set: guarded fields are changed by methods only. */
  readonly input: JsonSchema
  /** The row as a result carries it. */
  readonly row: JsonSchema
  readonly pageArgs: ReturnType<typeof pageArgs>
  /** A refused call's result, its text naming the app's tools to try next. */
  readonly refuse: (error: CommandError | NotFound | ValidationFailed) => ToolResult
}

interface OperationCommon {
  /** The tool is `<type>_<op>`, made where the type exposes `op` over MCP. */
  readonly op: string
  readonly texts: (p: TypeParts) => Texts
  readonly annotations: Hints
  readonly input: (p: TypeParts) => JsonSchema
  readonly output: (p: TypeParts) => JsonSchema
}

/** A read: its call, made once per type, and, when it can answer at once, the same read without an Effect. */
interface ReadOperation extends OperationCommon {
  readonly read: (p: TypeParts, queries: QueriesShape) => (args: Readonly<Record<string, unknown>>) => Effect.Effect<ToolResult>
  readonly readNow?: (p: TypeParts, queries: QueriesShape) => (args: Readonly<Record<string, unknown>>) => ToolResult
}

/** A write: the command its arguments make (or the result refusing them), and its answer once committed. */
interface WriteOperation extends OperationCommon {
  readonly toCommand: (t: string, args: Readonly<Record<string, unknown>>) => Either.Either<Command, ToolResult>
  readonly answer: (c: Committed) => ToolResult
}

type Operation = ReadOperation | WriteOperation

const committedRow = (c: Committed) => rowResult(c.row!, c.rowJson ?? undefined)

/** Splits `{id, expectedVersion?, ...rest}` arguments, validating the first two through Schema. */
const targeted = (
  type: string,
  args: Readonly<Record<string, unknown>>,
  f: (id: string, expectedVersion: number | undefined, rest: Readonly<Record<string, unknown>>) => Command
): Either.Either<Command, ToolResult> => {
  const target = plainTarget(args)
  if (target === undefined) {
    const decoded = decodeTarget(args)
    if (Either.isLeft(decoded)) return Either.left(argumentError(type, decoded.left))
  }
  const { id, expectedVersion, ...rest } = args
  return Either.right(f(id as string, expectedVersion as number | undefined, rest))
}

/**
 * A page that read only part of the rows (queries.ts: `partial`): REST's body, then a sentence for the agent, which
 * might otherwise take a page with few or no rows for the end of the list.
 */
const partialPage = (t: string, request: ListRequest, page: Page): ToolResult => {
  const field = request.where?.[0]?.field
  const note = `This page is partial: the index on ${field ?? "the filtered field"} of ${t} is being built, or its filters are checked row by row over many rows, so this page read only part of the rows ` +
    `and may hold fewer than limit, even none. Call ${t}_list again with the same arguments and cursor ${JSON.stringify(page.nextCursor)} to go on; ` +
    `the list ends only at a page without nextCursor.`
  return {
    result: {
      content: [{ type: "text", text: listBody(page) }, { type: "text", text: note }],
      structuredContent: { items: page.items, nextCursor: page.nextCursor, partial: true }
    }
  }
}

/** The operations every type has, in tool order. */
const CRUD: ReadonlyArray<Operation> = [
  {
    op: "list",
    texts: ({ type, t, about }) => ({
      title: `List ${t}`,
      description: `List ${t} rows, a page at a time; pass the returned nextCursor to continue (a page marked partial may hold fewer rows than limit, even none). ` +
        `Filter with where (a field equals a value, or a range {gte, lt, ...}, a set {in: [...]}, or null for no value; several fields: all must match) ` +
        `and ${orderSentence(type)}.${about}`
    }),
    annotations: READS,
    input: (p) => {
      const page = derived(p.pageArgs)
      return objectSchema({ cursor: page.properties.cursor, limit: page.properties.limit, ...listFilterSchemas(p.type) }, [])
    },
    output: (p) => objectSchema({ items: { type: "array", items: p.row }, nextCursor: { type: "string" }, partial: { type: "boolean" } }, ["items"], false),
    read: ({ type, t, pageArgs, refuse }, queries) => {
      const decodePageArgs = Schema.decodeUnknownEither(pageArgs, { onExcessProperty: "error" })
      return (args) =>
        // `where` as parsed: the decoded copy has lost any own `__proto__` key (list-request.ts).
        Either.match(Either.flatMap(Either.mapLeft(decodePageArgs(args), (e) => argumentError(t, e)), (page) =>
          Either.mapLeft(fromArguments(type, { ...page, ...(page.where !== undefined ? { where: args.where as Readonly<Record<string, unknown>> } : {}) }), refuse)), {
          onLeft: (result) => Effect.succeed(result),
          onRight: (page) =>
            queries.list(t, page).pipe(
              Effect.match({
                onFailure: refuse,
                onSuccess: (p) => p.partial ? partialPage(t, page, p) : success(listBody(p), p.nextCursor ? { items: p.items, nextCursor: p.nextCursor } : { items: p.items })
              })
            )
        })
    }
  },
  {
    op: "get",
    texts: ({ t, about }) => ({ title: `Get one of ${t}`, description: `Get one row of ${t} by id (the same JSON as GET /api/${t}/<id>).${about}` }),
    annotations: READS,
    input: () => objectSchema(ID_ONLY.properties, ID_ONLY.required),
    output: (p) => p.row,
    read: ({ t, refuse }, queries) => {
      const onRead = { onFailure: refuse, onSuccess: readRowResult }
      const read = (id: string) => Effect.match(queries.get(t, id), onRead)
      return (args) => {
        const id = plainId(args)
        return id !== undefined
          ? read(id)
          : Either.match(decodeIdOnly(args), { onLeft: (e) => Effect.succeed(argumentError(t, e)), onRight: ({ id }) => read(id) })
      }
    },
    // The same answers as `read`: the row through the row cache, NotFound as its isError result.
    readNow: ({ t, refuse }, queries) => {
      const read = (id: string): ToolResult => {
        const row = queries.row(t, id)
        return row === undefined ? refuse(new NotFound({ type: t, id })) : readRowResult(row)
      }
      return (args) => {
        const id = plainId(args)
        return id !== undefined ? read(id) : Either.match(decodeIdOnly(args), { onLeft: (e) => argumentError(t, e), onRight: ({ id }) => read(id) })
      }
    }
  },
  {
    op: "create",
    texts: ({ t, about }) => ({ title: `Create one of ${t}`, description: `Create a row in ${t}; the store assigns its id. Answered once the write is durable.${about}` }),
    annotations: WRITES,
    input: (p) => p.input,
    output: (p) => p.row,
    toCommand: (t, args) => Either.right({ _tag: "Create", type: t, input: args }),
    answer: committedRow
  },
  {
    op: "update",
    texts: ({ t, type }) => ({
      title: `Update one of ${t}`,
      description: `Change some fields of a row in ${t}. Pass expectedVersion to refuse the change if someone else changed the row first.` +
        (type.rules.guarded.size === 0 ? "" : ` ${[...type.rules.guarded].join(", ")}: changed by methods only.`)
    }),
    annotations: WRITES,
    input: (p) => objectSchema({ ...TARGET.properties, ...withoutDefaults(propertiesOf(p.input)) }, TARGET.required),
    output: (p) => p.row,
    toCommand: (t, args) => targeted(t, args, (id, expectedVersion, input) => ({ _tag: "Update", type: t, id, expectedVersion, input })),
    answer: committedRow
  },
  {
    op: "delete",
    texts: ({ t }) => ({ title: `Delete one of ${t}`, description: `Delete a row of ${t} by id. The log keeps its history.` }),
    annotations: DELETES,
    input: () => objectSchema(TARGET.properties, TARGET.required),
    output: () => objectSchema(DELETED.properties, DELETED.required, false),
    toCommand: (t, args) =>
      Either.match(decodeTargetOnly(args), {
        onLeft: (e) => Either.left(argumentError(t, e)),
        onRight: ({ id, expectedVersion }) => Either.right({ _tag: "Delete", type: t, id, expectedVersion })
      }),
    answer: ({ event }) => {
      const body = deletedBody(event)
      return success(JSON.stringify(body), body)
    }
  }
]

/** `<type>_<method>`: the method's params beside the target row. */
const methodOperation = (method: CompiledMethod): WriteOperation => ({
  op: method.name,
  texts: ({ t }) => ({
    title: `${method.name} on ${t}`,
    description: `${method.description ?? `Run ${method.name} on a row of ${t}.`} Pass expectedVersion to refuse it if the row changed first.`
  }),
  annotations: RUNS,
  input: () => objectSchema({ ...TARGET.properties, ...propertiesOf(method.paramsJsonSchema) }, [...TARGET.required, ...requiredOf(method.paramsJsonSchema)]),
  output: (p) => p.row,
  toCommand: (t, args) => targeted(t, args, (id, expectedVersion, input) => ({ _tag: "Invoke", type: t, id, method: method.name, expectedVersion, input })),
  answer: committedRow
})

/** The type's operations exposed over MCP, in tool order: list, get, create, update, delete, then its methods. */
const operationsOf = (type: CompiledType): ReadonlyArray<Operation> => [
  ...CRUD.filter((o) => type.mcp.has(o.op)),
  ...[...type.methods.values()].filter((m) => type.mcp.has(m.name)).map(methodOperation)
]

/** The names of a type's tools, exactly as tools/list answers them (the console shows them). */
export const toolNames = (type: CompiledType): ReadonlyArray<string> => operationsOf(type).map((o) => `${type.name}_${o.op}`)

const typeTools = (app: CompiledApp, type: CompiledType, commands: CommandsShape, queries: QueriesShape, maxPageSize: number): Array<Tool> => {
  const fields = type.fieldsJsonSchema
  const refuse = (error: CommandError | NotFound | ValidationFailed) => failure(error, app)
  const parts: TypeParts = {
    refuse,
    type,
    t: type.name,
    about: type.description ? ` ${type.description}` : "",
    input: withoutProperties(fields, type.rules.guarded),
    row: objectSchema({ ...ROW_KEYS.properties, ...propertiesOf(fields) }, [...ROW_KEYS.required, ...requiredOf(fields)], false),
    pageArgs: pageArgs(maxPageSize)
  }
  return operationsOf(type).map((o): Tool => {
    const made = definition(`${type.name}_${o.op}`, o.texts(parts), o.input(parts), o.output(parts), o.annotations)
    if ("read" in o) {
      const operation = Op.read(type.name)
      if (o.readNow === undefined) return { definition: made, operation, call: o.read(parts, queries) }
      const readNow = o.readNow(parts, queries)
      return { definition: made, operation, call: o.read(parts, queries), callNow: (args, reply) => (reply.result(readNow(args)), noCancel) }
    }
    const committed = (c: Committed) => (c.replayed ? asReplay(o.answer(c)) : o.answer(c))
    const answered = { onFailure: refuse, onSuccess: committed }
    return {
      definition: made,
      operation: Op.write(type.name, o.op),
      call: (args, options) =>
        Either.match(o.toCommand(type.name, args), {
          onLeft: (refused) => Effect.succeed(refused),
          onRight: (command) => Effect.match(commands.execute(command, options), answered)
        }),
      // Hand-tuned (bench: MCP set_price): as `call`, without a fiber, as REST's row writes (rest.ts direct). Its
      // callback runs inside the writer's batch: nothing may throw into it.
      callNow: (args, reply, options) => {
        const command = o.toCommand(type.name, args)
        if (Either.isLeft(command)) {
          reply.result(command.left)
          return noCancel
        }
        return commands.executeNow(command.right, options, (exit) =>
          answerExit(exit, committed, refuse, (result) => reply.result(result), (cause) => reply.died(cause)))
      }
    }
  })
}

/** All tools of the app, in a deterministic order: types in catalog order, each as `operationsOf` orders it, then views. */
export const makeTools = (
  catalog: CompiledApp,
  commands: CommandsShape,
  queries: QueriesShape,
  maxPageSize: number,
  views?: ViewsShape,
  keyed?: { readonly views: KeyedViewsShape; readonly defaultPageSize: number }
): ReadonlyArray<Tool> => {
  const tools: Array<Tool> = []
  for (const type of catalog.types.values()) tools.push(...typeTools(catalog, type, commands, queries, maxPageSize))
  for (const view of catalog.views.values()) {
    // A keyed view has two tools of its own (keyed-view-tools.ts): one entry by key, and a page of entries.
    if (view.keyed) {
      if (keyed !== undefined) tools.push(...keyedViewTools(view, keyed.views, { defaultPageSize: keyed.defaultPageSize, maxPageSize }))
    } else if (views !== undefined) tools.push(viewTool(view, views))
  }
  return tools
}

/** `view_<name>`: a view's value, the same JSON as `GET /api/_views/<name>` and the resource `wo://views/<name>`. */
const viewTool = (view: CompiledView, views: ViewsShape): Tool => {
  const now = (args: Readonly<Record<string, unknown>>): ToolResult =>
    Either.match(decodeNoArguments(args), {
      onLeft: (e) => argumentError(`view ${view.name}`, e),
      onRight: (): ToolResult => {
        const snapshot = views.get(view.name)!
        if (snapshot.refolding !== undefined) return errorResult(new ViewRefolding({ name: view.name, reason: snapshot.refolding }).message)
        if (snapshot.failed !== undefined) return errorResult(new ViewFailed({ name: view.name, reason: snapshot.failed }).message)
        const body = viewBody(snapshot)
        return success(body, JSON.parse(body))
      }
    })
  return {
    definition: definition(`view_${view.name}`, {
      title: `View ${view.name}`,
      description: `${view.description ? `${view.description} ` : ""}The current value of the view ${view.name}, maintained on every ` +
        `commit (the same JSON as GET /api/_views/${view.name}; subscribe to wo://views/${view.name} to hear when it changes).`
    }, objectSchema({}, []), objectSchema({
      name: { type: "string" },
      seq: { type: "integer", minimum: 0, description: "the log sequence of the value's last change" },
      value: view.jsonSchema
    }, ["name", "seq", "value"], false), READS),
    operation: Op.view(view.name),
    call: (args) => Effect.sync(() => now(args)),
    callNow: (args, reply) => (reply.result(now(args)), noCancel)
  }
}

/**
 * The tool `<name>` of each app command served over MCP: its params as arguments, its answer the same JSON as
 * `POST /api/_commands/<name>` (command-body.ts), a refusal the same isError result as a method's.
 */
export const makeCommandTools = (catalog: CompiledApp, commands: CommandsShape): ReadonlyArray<Tool> =>
  [...catalog.commands.values()].filter((c) => c.mcp).map((command): Tool => ({
    definition: definition(command.name, {
      title: command.name,
      description: `${command.description ?? `Run the command ${command.name}.`} All of its changes are written atomically, or none.`
    }, objectSchema(propertiesOf(command.paramsJsonSchema), requiredOf(command.paramsJsonSchema)), COMMAND_RESULT, WRITES),
    operation: Op.command(command.name),
    call: (args, options) =>
      commands.executeAppCommand(command.name, args, options).pipe(
        Effect.match({
          onFailure: (error) => failure(error, catalog),
          onSuccess: (c) => {
            const answer = jsonResult(commandBody(c))
            return c.replayed ? asReplay(answer) : answer
          }
        })
      )
  }))
