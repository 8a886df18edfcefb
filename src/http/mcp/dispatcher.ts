/**
 * The dispatcher: one table from method to handler, for every method of both eras. A handler gets the request
 * and the context its era's policy admitted it in (era-policy.ts), and answers with a result or a stream of
 * messages (progress, a listen). It knows what each method means, never how it travels: no HTTP here, and no
 * era-specific wire shape (resultType, cache hints, error codes per era and statuses are the policies' and the
 * transport's). To add a method: one entry in `routes`, naming the eras that serve it.
 */
import { type Cause, Data, Effect, Either, Option, Schema } from "effect"
import type { Stage } from "../../commands/commands.ts"
import { noCancel } from "../../support/no-cancel.ts"
import { IDEMPOTENCY_KEY_META, keyProblem, scopedKey } from "../../commands/idempotency.ts"
import type { Settings } from "../../support/config.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import type { StoreError } from "../../domain/errors.ts"
import { ToolsCursor } from "../../projections/cursor.ts"
import { topicOf, type Topic } from "../../subscriptions/live-queries.ts"
import type { ListenRequest } from "./listen-stream.ts"
import {
  CallToolParams,
  decodeParams,
  type Era,
  InitializeParams,
  internalError,
  ListenParams,
  META,
  PaginatedParams,
  ReadResourceParams,
  SubscribeParams,
  invalidParams,
  Method,
  methodNotFound,
  MODERN_VERSIONS,
  negotiate,
  type Params,
  progressTokenOf,
  type RpcError,
  type RpcRequest
} from "./protocol.ts"
import type { ReadProblem, ResourceContents, Resources } from "./resources.ts"
import type { ServerDescription } from "./server-info.ts"
import { SessionsFull, Subscribed } from "./session-caps.ts"
import type { Session, SessionsShape } from "./sessions.ts"
import type { Tool } from "./tool.ts"
import { grantFor, type Operation } from "../../access/grants.ts"
import { uriOperation } from "../../access/operations.ts"
import { may, type Principal } from "../../access/principal.ts"
import { streamRefused, takeWrite, type LimitReached } from "../../access/rate-limits.ts"
import { actorOf, mcpClient, type Actor } from "../../domain/actor.ts"
import { overSubscriptionCaps, tooManySubscriptionBytes, uriBytes, uriTooLong } from "./uri-limits.ts"

/**
 * Caching hints, which the modern era puts on cacheable results. The catalog is fixed while the process runs; rows
 * are not.
 */
export interface CacheHint {
  readonly ttlMs: number
  readonly cacheScope: "public" | "private"
}
/** Catalog-derived results (tools, templates, schemas, discover): fixed until a restart, so five minutes. */
export const CATALOG_CACHE: CacheHint = { ttlMs: 300_000, cacheScope: "public" }
/** The same under wo dev, where the catalog changes on every save. */
const DEV_CATALOG_CACHE: CacheHint = { ttlMs: 0, cacheScope: "public" }
/** Row-derived results (rows, resource lists): always re-read. */
export const ROW_CACHE: CacheHint = { ttlMs: 0, cacheScope: "private" }

/** A method's result, before its era decorates it. */
export interface Outcome {
  readonly result: Readonly<Record<string, unknown>>
  /** The result as JSON text, when the handler made it more cheaply than JSON.stringify (it carries no `_meta`). */
  readonly json?: string
  /** Present on cacheable results; the modern era puts it on the wire. */
  readonly cache?: CacheHint
}

/** What a handler answers: a result, or a stream of messages that the transport frames. */
export type Answer =
  | { readonly _tag: "Result"; readonly outcome: Outcome; /** The session this answer opened (initialize). */ readonly opened?: Session }
  | {
    /** progress notifications, one per stage of the command, then the outcome, all on this request's own stream. */
    readonly _tag: "Progress"
    readonly token: string | number
    readonly run: (onStage: (stage: Stage) => void) => Effect.Effect<Outcome, Failure>
  }
  | { readonly _tag: "Listen"; readonly listen: ListenRequest }

/** The resource named does not exist: each era spells it its own way (legacy -32002, modern -32602). */
export class ResourceMissing extends Data.TaggedError("ResourceMissing")<{ readonly uri: string }> {}
/** The caller's principal lacks `grants` (every one the request needs): each era answers it on HTTP 403. */
export class Forbidden extends Data.TaggedError("Forbidden")<{ readonly grants: ReadonlyArray<string> }> {}
/** The caller's principal reached one of its limits (rate-limits.ts): each era answers it on HTTP 429. */
export class Limited extends Data.TaggedError("Limited")<{ readonly reached: LimitReached }> {}
/** The server cannot serve this now: a cap is reached; `retryAfter` (seconds) when a retry can succeed. */
export class Unavailable extends Data.TaggedError("Unavailable")<{ readonly message: string; readonly retryAfter?: number }> {}

/** Why a handler failed: a protocol error, the store (down, STORE_ERRORS), or a condition each era spells its own way. */
export type Failure = RpcError | ResourceMissing | Forbidden | Limited | Unavailable | StoreError

/** What the era's policy admitted a request with. */
export interface CallContext {
  readonly era: Era
  /** The revision the request is served as (a legacy session's negotiated one). */
  readonly version: string
  /** The legacy session the request belongs to (absent on initialize and in the modern era). */
  readonly session?: Session
  /** `params._meta`, read once by the transport. */
  readonly meta: Params | undefined
  /** The caller's address, for per-client limits. */
  readonly client: string
  /** Who the request acts as; absent where no credential is required (then everything is allowed). Writes record it. */
  readonly principal?: Principal
}

/**
 * Who a tool call acts as: its principal, and the client as it named itself, in the legacy era at initialize (kept
 * with its session), in the modern era in each request's `_meta`.
 */
export const actorOfCall = (context: CallContext): Actor =>
  actorOf(
    context.principal,
    context.session === undefined
      ? mcpClient(context.meta?.[META.clientInfo] as { readonly name?: unknown; readonly version?: unknown } | undefined, undefined)
      : mcpClient(context.session.client, context.session.id)
  )

type Handler = (request: RpcRequest, context: CallContext) => Effect.Effect<Answer, Failure>

interface Route {
  readonly eras: ReadonlyArray<Era>
  readonly handle: Handler
}

/** A write tool's call, counted against its principal's writes a second: the refusal when it reached the limit. */
const writeLimited = (principal: Principal | undefined, tool: Tool): Limited | undefined => {
  if (principal?.limits === undefined || (tool.operation._tag !== "Write" && tool.operation._tag !== "Command")) return undefined
  const reached = takeWrite(principal.limits)
  return reached === undefined ? undefined : new Limited({ reached })
}

export interface DispatcherDeps {
  readonly catalog: CompiledApp
  readonly tools: ReadonlyArray<Tool>
  readonly resources: Resources
  readonly sessions: SessionsShape
  readonly server: ServerDescription
  /** The log sequence the read models include: where a new legacy subscription begins. */
  readonly checkpoint: () => number
  readonly settings: Settings
  /** How many streams a principal has open now (its `streams` limit). */
  readonly streamsOf?: (principal: Principal) => number
}

/** How a request served without a fiber answers (`Dispatcher.dispatchNow`): once, and never by throwing. */
export interface DirectReply {
  readonly result: (outcome: Outcome) => void
  readonly failure: (failure: Failure) => void
  /** A defect of ours: answered as a failed request's fiber is (500, logged). */
  readonly died: (cause: Cause.Cause<unknown>) => void
}

export interface Dispatcher {
  readonly tools: ReadonlyArray<Tool>
  /** Runs the request's method, or fails with method-not-found when its era does not serve it. */
  readonly dispatch: (request: RpcRequest, context: CallContext) => Effect.Effect<Answer, Failure>
  /**
   * `dispatch` without a fiber, for the requests answered with one JSON result (hand-tuned, bench: MCP get and
   * set_price): tools/call of a tool with `callNow`, without an idempotency key or progress, and resources/read of
   * all but a list. Undefined when it does not take the request (nothing done: `dispatch` it); else what cancels
   * a write not yet taken. It may throw before it returns (a store read failure), never after.
   */
  readonly dispatchNow?: (request: RpcRequest, context: CallContext, reply: DirectReply) => (() => void) | undefined
}

const CursorParams = decodeParams(PaginatedParams)
const CallParams = decodeParams(CallToolParams)
const ReadParams = decodeParams(ReadResourceParams)
const decodeSubscribe = Schema.decodeUnknownEither(SubscribeParams)
const decodeInitialize = Schema.decodeUnknownEither(InitializeParams)
const decodeListen = Schema.decodeUnknownEither(ListenParams)

const isPlainObject = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * tools/call's params: `name` a string, `arguments` an object when present. Hot path (bench: MCP get): the
 * common shape is checked by hand and the arguments are left as parsed, to be decoded once, by the tool's own
 * Schema; anything else goes through the Schema for its message. The arguments are never the decoded copy:
 * a Record decode drops an own `__proto__` key, which the command's input rules must see to refuse it as
 * REST does.
 */
const callParams = (params: Params): Either.Either<{ readonly name: string; readonly args: Params }, RpcError> => {
  const { name } = params
  const args = Object.hasOwn(params, "arguments") ? params.arguments : undefined
  if (typeof name === "string" && (args === undefined || isPlainObject(args))) return Either.right({ name, args: args ?? {} })
  return Either.flatMap(CallParams(params), (p) => Either.right({ name: p.name, args: (params.arguments ?? {}) as Params }))
}

const result = (outcome: Outcome): Answer => ({ _tag: "Result", outcome })
const succeed = (r: Record<string, unknown>, cache?: CacheHint) => Effect.succeed(result(cache ? { result: r, cache } : { result: r }))
const fromEither = <A>(e: Either.Either<A, Failure>, f: (a: A) => Effect.Effect<Answer, Failure>): Effect.Effect<Answer, Failure> =>
  Either.match(e, { onLeft: (err) => Effect.fail(err), onRight: f })

/**
 * A resource that exists in form but cannot be read: a list URI naming a bad field (invalid params, naming it),
 * or a view whose evolve failed (internal error, naming the view and the event).
 */
const readFailure = (uri: string, problem: ReadProblem): Failure => {
  switch (problem._tag) {
    case "NotFound":
      return new ResourceMissing({ uri })
    case "Invalid":
      return invalidParams(problem.message)
    case "Failed":
      return internalError(problem.message, { uri })
  }
}

/** What the principal may do, as resources.ts takes it (undefined: everything, no credential required). */
const allowedFor = (principal: Principal | undefined) => (principal === undefined ? undefined : (op: Operation) => may(principal, op))

/** Doing `op`: refused, naming its grant, when the principal lacks it (no allocation when it has it: every call asks). */
const refusalFor = (principal: Principal | undefined, op: Operation): Forbidden | undefined =>
  may(principal, op) ? undefined : new Forbidden({ grants: [grantFor(op)] })

/** The grants `ops` need that `principal` lacks, or undefined when it has them all. */
const missing = (principal: Principal, ops: ReadonlyArray<Operation>): Forbidden | undefined => {
  const grants = [...new Set(ops.filter((op) => !may(principal, op)).map(grantFor))]
  return grants.length === 0 ? undefined : new Forbidden({ grants })
}

/** Reading `uri`: refused when the principal may not read it (a URI that is no resource is left to be not found). */
const readRefusal = (principal: Principal | undefined, uri: string): Forbidden | undefined => {
  if (principal === undefined) return undefined
  const op = uriOperation(uri)
  return op === undefined ? undefined : refusalFor(principal, op)
}

/**
 * A result that depends on who asks (a list filtered by grants) is private to the caller in the modern era's
 * caching hints: a shared cache must not hand one principal's list to another.
 */
const privateTo = (principal: Principal | undefined, hint: CacheHint): CacheHint =>
  principal === undefined || hint.cacheScope === "private" ? hint : { ...hint, cacheScope: "private" }

const TOOLS_PAGE = 100
const BOTH: ReadonlyArray<Era> = ["legacy", "modern"]
const LEGACY: ReadonlyArray<Era> = ["legacy"]
const MODERN: ReadonlyArray<Era> = ["modern"]

export const makeDispatcher = ({ catalog, tools, resources, sessions, server, checkpoint, settings, streamsOf }: DispatcherDeps): Dispatcher => {
  const byName = new Map(tools.map((t) => [t.definition.name, t]))
  const definitions = tools.map((t) => t.definition)
  // Under wo dev the catalog changes whenever the app does: nothing catalog-derived may be cached.
  const catalogCache = settings.catalogReloads === true ? DEV_CATALOG_CACHE : CATALOG_CACHE

  const readResult = (uri: string, contents: ResourceContents, principal: Principal | undefined): Outcome =>
    ({ result: { contents: [contents] }, cache: uri.startsWith("wo://schema/") ? privateTo(principal, catalogCache) : ROW_CACHE })

  /** The URI read once, as the registry takes it; a live query naming a bad field would never notify: refused, naming the field. */
  const topic = (uri: string): Either.Either<Topic, RpcError> =>
    Either.mapLeft(topicOf(catalog, uri), (e) => invalidParams(`${uri}: ${e.message}`))

  const subscription = (subscribe: boolean): Handler => (request, context) =>
    Either.match(decodeSubscribe(request.params), {
      onLeft: () => Effect.fail(invalidParams("params.uri must be a string")),
      onRight: ({ uri }) => {
        const tooLong = uriTooLong(uri, settings)
        if (tooLong !== undefined) return Effect.fail(tooLong)
        // The legacy policy admits these methods only with a session.
        const s = context.session!
        if (!subscribe) return Effect.as(sessions.unsubscribe(s, uri), result({ result: {} }))
        const refused = readRefusal(context.principal, uri)
        if (refused !== undefined) return Effect.fail(refused)
        return fromEither(topic(uri), (t) =>
          sessions.subscribe(s, t, checkpoint()).pipe(
            Effect.flatMap((outcome) => {
              switch (outcome._tag) {
                case "Subscribed":
                  return succeed({})
                case "SubscriptionBytesFull":
                  return Effect.fail(tooManySubscriptionBytes(settings, "session"))
                case "SubscriptionsFull":
                  return Effect.fail(invalidParams(`too many subscriptions on this session (WO_MAX_SUBSCRIPTIONS=${settings.maxSubscriptions})`))
              }
            })
          ))
      }
    })

  /** A tools/call's tool, its arguments and a write's idempotency key (idempotency.ts; reads ignore it). */
  const toolCallOf = (request: RpcRequest, context: CallContext) =>
    Either.flatMap(callParams(request.params), ({ name, args }): Either.Either<{ tool: Tool; args: Params; key: string | undefined }, Failure> => {
      const tool = byName.get(name)
      if (tool === undefined) return Either.left(invalidParams(`Unknown tool: ${name}`))
      // Before anything of the call is read: a tool not granted does nothing and discloses nothing.
      const refused = refusalFor(context.principal, tool.operation)
      if (refused !== undefined) return Either.left(refused)
      const key = context.meta?.[IDEMPOTENCY_KEY_META]
      const problem = key === undefined ? undefined : keyProblem(key)
      if (problem !== undefined) return Either.left(invalidParams(`_meta["${IDEMPOTENCY_KEY_META}"]: ${problem}`))
      // The principal's key (idempotency.ts): another principal's same key is another key.
      return Either.right({ tool, args, key: key === undefined ? undefined : scopedKey(context.principal?.keyScope, key as string) })
    })

  const routes = new Map<string, Route>([
    [Method.initialize, {
      // The legacy handshake. Carrying modern _meta, initialize is no method of that era.
      eras: LEGACY,
      handle: (request, { principal }) =>
        Either.match(decodeInitialize(request.params), {
          onLeft: () => Effect.fail(invalidParams("initialize needs params.protocolVersion")),
          onRight: (params) =>
            // The session is its principal's: its id says whose (access/session-owner.ts).
            sessions.create(negotiate(params.protocolVersion), principal?.keyScope, params.clientInfo).pipe(
              Effect.flatMap((session) =>
                session instanceof SessionsFull
                  ? Effect.fail(new Unavailable({ message: `too many sessions (WO_MAX_SESSIONS=${settings.maxSessions}); retry later`, retryAfter: 1 }))
                  : Effect.succeed<Answer>({
                    _tag: "Result",
                    outcome: { result: { protocolVersion: session.version, capabilities: server.legacyCapabilities, serverInfo: server.info, instructions: server.instructions } },
                    opened: session
                  }))
            )
        })
    }],
    // ping is not a method of the modern era.
    [Method.ping, { eras: LEGACY, handle: () => succeed({}) }],
    [Method.resourcesSubscribe, { eras: LEGACY, handle: subscription(true) }],
    [Method.resourcesUnsubscribe, { eras: LEGACY, handle: subscription(false) }],
    [Method.discover, {
      eras: MODERN,
      handle: () =>
        succeed({ supportedVersions: [...MODERN_VERSIONS], capabilities: server.modernCapabilities, instructions: server.instructions }, catalogCache)
    }],
    [Method.listen, {
      // The ack first, then only the requested notice types; the stream itself is listen-stream.ts's.
      eras: MODERN,
      handle: (request, { client, principal }) => {
        const params = decodeListen(request.params)
        if (Either.isLeft(params)) return Effect.fail(invalidParams("params.notifications must be a subscription filter"))
        const { notifications } = params.right
        const asked = notifications.resourceSubscriptions ?? []
        for (const uri of asked) {
          const refused = uriTooLong(uri, settings)
          if (refused !== undefined) return Effect.fail(refused)
        }
        const uris = [...new Set(asked)]
        let bytes = 0
        for (const uri of uris) bytes += uriBytes(uri)
        const over = overSubscriptionCaps(uris.length, bytes, settings)
        if (over?._tag === "SubscriptionsFull") return Effect.fail(invalidParams(`too many resourceSubscriptions (WO_MAX_SUBSCRIPTIONS=${settings.maxSubscriptions})`))
        if (over?._tag === "SubscriptionBytesFull") return Effect.fail(tooManySubscriptionBytes(settings, "listen"))
        // Refused whole when any URI is not readable: which of them is, is not told apart per URI.
        const refused = principal === undefined ? undefined : missing(principal, uris.flatMap((uri) => uriOperation(uri) ?? []))
        if (refused !== undefined) return Effect.fail(refused)
        const reached = principal === undefined || streamsOf === undefined ? undefined : streamRefused(principal.limits, streamsOf(principal))
        if (reached !== undefined) return Effect.fail(new Limited({ reached }))
        const topics = Either.all(uris.map(topic))
        if (Either.isLeft(topics)) return Effect.fail(topics.left)
        const lists = notifications.resourcesListChanged === true
        const tools = notifications.toolsListChanged === true && settings.catalogReloads === true
        const honoured = {
          ...(uris.length ? { resourceSubscriptions: uris } : {}),
          ...(lists ? { resourcesListChanged: true } : {}),
          ...(tools ? { toolsListChanged: true } : {})
        }
        return Effect.succeed<Answer>({ _tag: "Listen", listen: { id: request.id, client, topics: topics.right, listChanges: lists, toolsListChanges: tools, honoured, principal } })
      }
    }],
    [Method.toolsList, {
      eras: BOTH,
      handle: (request, { principal }) =>
        fromEither(CursorParams(request.params), ({ cursor }) => {
          // Only the tools the principal may call: the same list, in the same order, for the same grants.
          const listed = principal === undefined ? definitions : tools.filter((t) => may(principal, t.operation)).map((t) => t.definition)
          const cache = privateTo(principal, catalogCache)
          const start = cursor === undefined ? Option.some(0) : ToolsCursor.decode(cursor)
          if (Option.isNone(start) || start.value > listed.length) return Effect.fail(invalidParams("invalid cursor"))
          const from = start.value
          const page = listed.slice(from, from + TOOLS_PAGE)
          return from + TOOLS_PAGE < listed.length
            ? succeed({ tools: page, nextCursor: ToolsCursor.encode(from + TOOLS_PAGE) }, cache)
            : succeed({ tools: page }, cache)
        })
    }],
    [Method.toolsCall, {
      eras: BOTH,
      handle: (request, context) =>
        fromEither(toolCallOf(request, context), ({ tool, args, key }) => {
          const limitedNow = writeLimited(context.principal, tool)
          if (limitedNow !== undefined) return Effect.fail(limitedNow)
          const actor = actorOfCall(context)
          const keyed = key === undefined ? { actor } : { idempotencyKey: key, actor }
          const token = progressTokenOf(context.meta)
          if (token !== undefined) {
            return Effect.succeed<Answer>({
              _tag: "Progress",
              token,
              run: (onStage) => Effect.map(tool.call(args, { onStage, ...keyed }), (r): Outcome => ({ result: r.result, json: r.json }))
            })
          }
          // A tool's result is already an Outcome (a result, its JSON): answered as it is.
          return Effect.map(tool.call(args, keyed), result)
        })
    }],
    [Method.resourcesList, {
      eras: BOTH,
      handle: (request, { principal }) =>
        fromEither(CursorParams(request.params), ({ cursor }) =>
          // A store that cannot be read is a defect here, as it always was (an internal error).
          Effect.flatMap(Effect.orDie(resources.list(cursor, allowedFor(principal))), (page) =>
            page === undefined ? Effect.fail(invalidParams("invalid cursor")) : succeed({ ...page }, ROW_CACHE)))
    }],
    [Method.resourceTemplatesList, {
      eras: BOTH,
      handle: (_request, { principal }) => succeed({ resourceTemplates: resources.templates(allowedFor(principal)) }, privateTo(principal, catalogCache))
    }],
    [Method.resourcesRead, {
      eras: BOTH,
      handle: (request, { principal }) =>
        fromEither(ReadParams(request.params), ({ uri }) => {
          const tooLong = uriTooLong(uri, settings)
          if (tooLong !== undefined) return Effect.fail(tooLong)
          const refused = readRefusal(principal, uri)
          if (refused !== undefined) return Effect.fail(refused)
          return resources.read(uri, allowedFor(principal)).pipe(
            Effect.mapBoth({
              onFailure: (problem) => readFailure(uri, problem),
              onSuccess: (contents) => result(readResult(uri, contents, principal))
            })
          )
        })
    }]
  ])

  // A legacy session's calls without a principal all act as the same actor: their options made once per session
  // (hand-tuned: the direct tools/call path allocates nothing for it per call).
  const sessionOptions = new WeakMap<Session, { readonly actor: Actor }>()
  const callOptions = (context: CallContext): { readonly actor: Actor } => {
    const session = context.session
    if (session === undefined || context.principal !== undefined) return { actor: actorOfCall(context) }
    let options = sessionOptions.get(session)
    if (options === undefined) sessionOptions.set(session, (options = { actor: actorOfCall(context) }))
    return options
  }

  /** tools/call without a fiber: as its route's handler answers it, when it answers with one result. */
  const callNow = (request: RpcRequest, context: CallContext, reply: DirectReply) => {
    const call = toolCallOf(request, context)
    if (Either.isLeft(call)) return (reply.failure(call.left), noCancel)
    const { tool, args, key } = call.right
    if (tool.callNow === undefined || key !== undefined || progressTokenOf(context.meta) !== undefined) return undefined
    // Counted here, once the call is taken this way (else `dispatch` counts it).
    const limitedNow = writeLimited(context.principal, tool)
    if (limitedNow !== undefined) return (reply.failure(limitedNow), noCancel)
    return tool.callNow(args, reply, callOptions(context))
  }

  /** resources/read without a fiber: as its route's handler answers it, for all but a list. */
  const readNow = (request: RpcRequest, context: CallContext, reply: DirectReply) => {
    const params = ReadParams(request.params)
    if (Either.isLeft(params)) return (reply.failure(params.left), noCancel)
    const { uri } = params.right
    const tooLong = uriTooLong(uri, settings)
    if (tooLong !== undefined) return (reply.failure(tooLong), noCancel)
    const { principal } = context
    const refused = readRefusal(principal, uri)
    if (refused !== undefined) return (reply.failure(refused), noCancel)
    const read = resources.readNow?.(uri, allowedFor(principal))
    if (read === undefined) return undefined
    if (Either.isLeft(read)) reply.failure(readFailure(uri, read.left))
    else reply.result(readResult(uri, read.right, principal))
    return noCancel
  }

  return {
    tools,
    dispatchNow: (request, context, reply) => {
      // Only where `dispatch` would run the same method's handler (both serve both eras): else it answers.
      if (!routes.get(request.method)?.eras.includes(context.era)) return undefined
      return request.method === Method.toolsCall ? callNow(request, context, reply) : request.method === Method.resourcesRead ? readNow(request, context, reply) : undefined
    },
    dispatch: (request, context) => {
      // One lookup per request; a method of the other era is as unknown as one of no era.
      const route = routes.get(request.method)
      return route === undefined || !route.eras.includes(context.era) ? Effect.fail(methodNotFound(request.method)) : route.handle(request, context)
    }
  }
}
