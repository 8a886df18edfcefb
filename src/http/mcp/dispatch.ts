/**
 * Dispatch: method name to handler, shared by both eras (no second data path). Transports (legacy sessions,
 * modern stateless) decide the era and the wire details; this module only knows what each method means.
 */
import { Effect, Either, Schema } from "effect"
import type { Stage } from "../../commands/group-commit.ts"
import { ErrorCode } from "./protocol.ts"
import type { ReadProblem, Resources } from "./resources.ts"
import { invalidParams, RpcError } from "./rpc.ts"
import type { Tool } from "./tools.ts"

export type Era = "legacy" | "modern"

export interface CallContext {
  readonly era: Era
  readonly version: string
  /** Set when the caller streams progress for this request. */
  readonly onStage?: (stage: Stage) => void
}

/** Caching hints (M4). The catalog is fixed while the process runs; rows are not. */
export interface CacheHint {
  readonly ttlMs: number
  readonly cacheScope: "public" | "private"
}
/** Catalog-derived results (tools, templates, schemas, discover): fixed until a restart, so five minutes. */
export const CATALOG_CACHE: CacheHint = { ttlMs: 300_000, cacheScope: "public" }
/** Row-derived results (rows, resource lists): always re-read. */
export const ROW_CACHE: CacheHint = { ttlMs: 0, cacheScope: "private" }

export interface Outcome {
  readonly result: Record<string, unknown>
  /** Present on cacheable results; the modern era puts it on the wire. */
  readonly cache?: CacheHint
}

type Handler = (params: Readonly<Record<string, unknown>>, context: CallContext) => Effect.Effect<Outcome, RpcError>

const decodeWith = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema)
  return (params: unknown): Either.Either<A, RpcError> =>
    Either.mapLeft(decode(params), (e) => invalidParams(`invalid params: ${e.message.split("\n").slice(-1)[0].trim()}`))
}

const CursorParams = decodeWith(Schema.Struct({ cursor: Schema.optional(Schema.String) }))
const CallParams = decodeWith(Schema.Struct({
  name: Schema.String,
  arguments: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}))
const ReadParams = decodeWith(Schema.Struct({ uri: Schema.String }))

const fromEither = <A>(e: Either.Either<A, RpcError>, f: (a: A) => Effect.Effect<Outcome, RpcError>) =>
  Either.match(e, { onLeft: (err) => Effect.fail(err), onRight: f })

/** Resource not found: -32002 in the legacy era (L9), -32602 in the modern one (M8); both carry the uri. */
export const resourceNotFound = (era: Era, uri: string) =>
  new RpcError({
    code: era === "legacy" ? ErrorCode.ResourceNotFound : ErrorCode.InvalidParams,
    message: `Resource not found: ${uri}`,
    data: { uri }
  })

/**
 * A resource that exists in form but cannot be read: a list URI naming a bad field (invalid params, naming it),
 * or a view whose evolve failed (internal error, naming the view and the event).
 */
const readError = (era: Era, uri: string, problem: ReadProblem): RpcError => {
  switch (problem._tag) {
    case "NotFound":
      return resourceNotFound(era, uri)
    case "Invalid":
      return invalidParams(problem.message)
    case "Failed":
      return new RpcError({ code: ErrorCode.InternalError, message: problem.message, data: { uri } })
  }
}

export const methodNotFound = (era: Era, method: string) =>
  new RpcError({ code: ErrorCode.MethodNotFound, message: `Method not found: ${method}`, status: era === "modern" ? 404 : 200 })

export interface Dispatcher {
  readonly tools: ReadonlyArray<Tool>
  readonly handle: (method: string, params: Readonly<Record<string, unknown>>, context: CallContext) => Effect.Effect<Outcome, RpcError>
}

const TOOLS_PAGE = 100

export const makeDispatcher = (tools: ReadonlyArray<Tool>, resources: Resources): Dispatcher => {
  const byName = new Map(tools.map((t) => [t.definition.name, t]))
  const definitions = tools.map((t) => t.definition)

  const handlers: Record<string, Handler> = {
    "tools/list": (params) =>
      fromEither(CursorParams(params), ({ cursor }) => {
        const start = cursor === undefined ? 0 : Number.parseInt(Buffer.from(cursor, "base64url").toString("utf8"), 10)
        if (!Number.isInteger(start) || start < 0 || start > definitions.length) return Effect.fail(invalidParams("invalid cursor"))
        const page = definitions.slice(start, start + TOOLS_PAGE)
        const next = start + TOOLS_PAGE < definitions.length ? Buffer.from(String(start + TOOLS_PAGE)).toString("base64url") : undefined
        return Effect.succeed({ result: next ? { tools: page, nextCursor: next } : { tools: page }, cache: CATALOG_CACHE })
      }),
    "tools/call": (params, context) =>
      fromEither(CallParams(params), ({ name }) => {
        const tool = byName.get(name)
        if (tool === undefined) return Effect.fail(invalidParams(`Unknown tool: ${name}`))
        // The arguments as parsed, not the decoded copy: the Record decode drops an own `__proto__` key, which
        // the command's input rules must see to refuse it as REST does.
        const args = (Object.hasOwn(params, "arguments") ? params.arguments ?? {} : {}) as Readonly<Record<string, unknown>>
        return Effect.map(tool.call(args, { onStage: context.onStage }), (r) => ({ result: { ...r } }))
      }),
    "resources/list": (params) =>
      fromEither(CursorParams(params), ({ cursor }) => {
        const page = resources.list(cursor)
        return page === undefined ? Effect.fail(invalidParams("invalid cursor")) : Effect.succeed({ result: { ...page }, cache: ROW_CACHE })
      }),
    "resources/templates/list": () => Effect.succeed({ result: { resourceTemplates: resources.templates }, cache: CATALOG_CACHE }),
    "resources/read": (params, context) =>
      fromEither(ReadParams(params), ({ uri }) =>
        resources.read(uri).pipe(
          Effect.mapBoth({
            onFailure: (problem) => readError(context.era, uri, problem),
            onSuccess: (contents) => ({ result: { contents: [contents] }, cache: uri.startsWith("wo://schema/") ? CATALOG_CACHE : ROW_CACHE })
          })
        ))
  }

  return {
    tools,
    handle: (method, params, context) => {
      const handler = Object.hasOwn(handlers, method) ? handlers[method] : undefined
      return handler === undefined ? Effect.fail(methodNotFound(context.era, method)) : handler(params, context)
    }
  }
}
