/**
 * The HTTP transport of /mcp: the only place here that knows headers, statuses, SSE response shapes and the session
 * id header. It checks what both eras share (one JSON-RPC message per POST, Accept and Content-Type, the body's
 * size), reads the envelope once (`_meta` and the Mcp-* headers), picks the era's policy with the protocol's era
 * predicate, lets the policy admit the message, runs the dispatcher, and puts the answer on the wire: JSON, a
 * progress SSE stream, a listen stream, or the refusal with the status of its kind (REFUSAL_STATUS). GET opens a
 * legacy session's stream, DELETE ends the session; both are 405 for modern clients, which have no session.
 */
import { Cause, Effect, Either, Stream } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import { isStoreError } from "../../domain/errors.ts"
import { noCancel } from "../../support/no-cancel.ts"
import type { DirectRespond, DirectRoute } from "../edge/edge.ts"
import { httpError } from "../edge/edge-error.ts"
import { empty, json, type EdgeRequest, type EdgeResponse, type Headers } from "../edge/edge-types.ts"
import { describeBodyProblem, isJsonContentType, parseJsonBody } from "../edge/json-body.ts"
import { SSE_HEADERS, sseFrame } from "../../support/sse.ts"
import { forbiddenHeaders } from "../edge/access-refusals.ts"
import type { Answer, CallContext, DirectReply, Dispatcher, Failure, Outcome } from "./dispatcher.ts"
import { limitedRefusal, malformed, storeDown, type Envelope, type EraPolicy, type Refusal } from "./era-policy.ts"
import { streamRefused } from "../../access/rate-limits.ts"
import type { LegacyPolicy } from "./legacy-era.ts"
import type { ListenRequest } from "./listen-stream.ts"
import { progressMessages } from "./progress-stream.ts"
import {
  classify,
  ErrorCode,
  eraOf,
  errorMessage,
  idOf,
  metaOf,
  Method,
  MODERN_VERSIONS,
  RpcError,
  type RpcId,
  type RpcMessage,
  type RpcRequest
} from "./protocol.ts"
import type { Session, SessionsShape } from "./sessions.ts"
import type { Principal } from "../../access/principal.ts"
import type { PrincipalActivity } from "../../access/principal-activity.ts"

/** The headers of MCP's Streamable HTTP transport, as node:http gives them (lower case). */
export const SESSION_HEADER = "mcp-session-id"
const PROTOCOL_VERSION_HEADER = "mcp-protocol-version"
const METHOD_HEADER = "mcp-method"
const NAME_HEADER = "mcp-name"
const LAST_EVENT_ID_HEADER = "last-event-id"

const headerValue = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const v = headers[name]
  return Array.isArray(v) ? v[0] : v
}

/** True when an Accept header allows `type` (absent means anything, as in HTTP). */
export const accepts = (accept: string | undefined, type: string): boolean => {
  if (accept === undefined) return true
  const [major] = type.split("/")
  return accept.split(",").some((part) => {
    const media = part.split(";")[0].trim().toLowerCase()
    return media === type || media === "*/*" || media === `${major}/*`
  })
}

/** What MCP clients send (and what curl's default `*\/*` stands for): checked without splitting. */
const COMMON_ACCEPT = new Set(["application/json, text/event-stream", "text/event-stream, application/json", "*/*"])

const acceptsBoth = (accept: string | undefined) =>
  accept === undefined || COMMON_ACCEPT.has(accept) || (accepts(accept, "application/json") && accepts(accept, "text/event-stream"))

// ---------------------------------------------------------------------------------------------------
// Answers: every error is a JSON-RPC body, never HTML or empty.

const resultBody = (id: RpcId, outcome: Outcome): string =>
  outcome.json !== undefined
    ? `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${outcome.json}}`
    : JSON.stringify({ jsonrpc: "2.0", id, result: outcome.result })

/** A result's response, its headers in one literal with their Content-Length (the edge then writes them as they are). */
const rpcResult = (id: RpcId, outcome: Outcome, session?: Session): EdgeResponse => {
  const body = resultBody(id, outcome)
  const length = String(Buffer.byteLength(body))
  const headers: Headers = session === undefined
    ? { "content-type": "application/json", "content-length": length }
    : { "content-type": "application/json", [SESSION_HEADER]: session.id, "content-length": length }
  return { _tag: "Buffered", status: 200, headers, body }
}

/** The HTTP status of each kind of refusal: the one place the policies' refusals meet HTTP. */
const REFUSAL_STATUS: { readonly [K in Refusal["_tag"]]: number } = {
  Answered: 200,
  Malformed: 400,
  UnknownSession: 404,
  UnknownMethod: 404,
  TooMany: 429,
  // A JSON-RPC error on HTTP 403, not an isError tool result: the request itself is not allowed (the model must
  // not take it for a tool that failed and retry), and 403 is where an OAuth client looks to step up its scopes.
  Forbidden: 403,
  Limited: 429,
  Unavailable: 503
}

/** OAuth's `insufficient_scope` challenge for a 403 (access.ts), naming every grant the request needs and where the metadata is, as the request's Host says. */
export type ForbiddenChallenge = (grants: ReadonlyArray<string>, headers: IncomingHttpHeaders) => string

/** `forbiddenChallenge`: absent with OAuth off; `headers`: the request's. */
const refused = (id: RpcId | null, refusal: Refusal, forbiddenChallenge?: ForbiddenChallenge, headers: IncomingHttpHeaders = {}): EdgeResponse =>
  json(
    REFUSAL_STATUS[refusal._tag],
    errorMessage(id, refusal.error),
    (refusal._tag === "Unavailable" || refusal._tag === "Limited") && refusal.retryAfter !== undefined
      ? { "retry-after": String(refusal.retryAfter) }
      : refusal._tag === "Forbidden" ? forbiddenHeaders(forbiddenChallenge?.(refusal.grants, headers)) : {}
  )

const accepted = (): EdgeResponse => empty(202)

/** A handler's failure as its era refuses it; a refusal of the principal's own (a grant missing, a limit reached) counted against it. */
const refusalOf = (policy: EraPolicy, failure: Failure, principal: Principal | undefined, activity: PrincipalActivity | undefined): Refusal => {
  const refusal = policy.refuse(failure)
  if (principal !== undefined && activity !== undefined) {
    if (refusal._tag === "Forbidden") activity.count(principal.name, "forbidden")
    else if (refusal._tag === "Limited") activity.count(principal.name, "limited")
  }
  return refusal
}

// Object.assign, not a spread followed by new keys (a new hidden class per answer: edge-types.ts `jsonText`).
const withHeaders = (response: EdgeResponse, headers: Headers): EdgeResponse => ({ ...response, headers: Object.assign({}, response.headers, headers) })

/**
 * A request served on the direct route (`makeMcpTransport`'s `direct`), answered as `respond` in transport's
 * `post` answers it: a result in its era's shape, a failure as its era refuses it. Called from the writer's batch
 * for a write: never throws. One object per request, its methods shared.
 */
class ReplyTo implements DirectReply {
  constructor(
    readonly respond: DirectRespond,
    readonly policy: EraPolicy,
    readonly id: RpcId,
    readonly principal: Principal | undefined,
    readonly activity: PrincipalActivity | undefined,
    readonly headers: IncomingHttpHeaders,
    readonly forbiddenChallenge?: ForbiddenChallenge
  ) {}
  result(outcome: Outcome) {
    this.answer(() => rpcResult(this.id, this.policy.decorate(outcome)))
  }
  failure(failure: Failure) {
    this.answer(() => refused(this.id, refusalOf(this.policy, failure, this.principal, this.activity), this.forbiddenChallenge, this.headers))
  }
  /** Answers what `make` builds; a throw while building it is answered as a defect. */
  private answer(make: () => EdgeResponse) {
    let response: EdgeResponse
    try {
      response = make()
    } catch (e) {
      return this.respond.failed(Cause.die(e))
    }
    this.respond.answer(response)
  }
  died(cause: Cause.Cause<unknown>) {
    this.respond.failed(cause)
  }
}

// ---------------------------------------------------------------------------------------------------

export interface TransportDeps {
  readonly dispatcher: Dispatcher
  readonly legacy: LegacyPolicy
  readonly modern: EraPolicy
  readonly sessions: SessionsShape
  /** listen-stream.ts: a modern listen stream, or its refusal (the only one it makes: too many streams, 429). */
  readonly openListen: (request: ListenRequest) => Either.Either<EdgeResponse, RpcError>
  /** session-stream.ts: a legacy session's GET stream, resumed after Last-Event-ID. */
  readonly openSessionStream: (session: Session, lastEventId: string | undefined, client: string, principal?: Principal) => EdgeResponse
  readonly maxJsonDepth: number
  /** How many streams a principal has open now (its `streams` limit); absent: none counted. */
  readonly streamsOf?: (principal: Principal) => number
  /** OAuth's challenge on a 403; absent with OAuth off. */
  readonly forbiddenChallenge?: ForbiddenChallenge
  /** Where principals' refusals are counted (access.ts); absent without principals. */
  readonly activity?: PrincipalActivity
}

export const makeMcpTransport = (deps: TransportDeps) => {
  const { dispatcher, legacy, modern, sessions, openListen, openSessionStream, maxJsonDepth, streamsOf, forbiddenChallenge, activity } = deps
  let responseStreams = 0

  const envelopeOf = (request: EdgeRequest, meta: Envelope["meta"]): Envelope => ({
    meta,
    protocolVersion: headerValue(request.headers, PROTOCOL_VERSION_HEADER),
    mcpMethod: headerValue(request.headers, METHOD_HEADER),
    mcpName: headerValue(request.headers, NAME_HEADER),
    sessionId: headerValue(request.headers, SESSION_HEADER),
    client: request.remoteAddress,
    principal: request.principal
  })

  /** A request's answer on the wire, in its era's shape. */
  const respond = (policy: EraPolicy, request: RpcRequest, context: CallContext, answer: Answer): EdgeResponse => {
    switch (answer._tag) {
      case "Result":
        return rpcResult(request.id, policy.decorate(answer.outcome), answer.opened)
      case "Progress": {
        const { eventIds, priming } = policy.streamShape(context)
        const streamId = eventIds ? `req${++responseStreams}` : undefined
        let n = 0
        const messages = Stream.map(
          // progress-stream.ts runs the call in the stream's scope: closing the response cancels it.
          progressMessages({
            token: answer.token,
            run: answer.run,
            respond: (outcome) =>
              Effect.match(outcome, {
                onFailure: (failure) => JSON.stringify(errorMessage(request.id, refusalOf(policy, failure, context.principal, activity).error)),
                onSuccess: (o) => resultBody(request.id, policy.decorate(o))
              })
          }),
          (data) => sseFrame({ id: streamId && `${streamId}-${++n}`, event: "message", data })
        )
        const events = priming ? Stream.concat(Stream.make(sseFrame({ id: streamId && `${streamId}-0`, data: "" })), messages) : messages
        const headers = context.session !== undefined ? { ...SSE_HEADERS, [SESSION_HEADER]: context.session.id } : SSE_HEADERS
        return { _tag: "Stream", status: 200, headers, events }
      }
      case "Listen":
        return Either.match(openListen(answer.listen), {
          onLeft: (error) => refused(request.id, { _tag: "TooMany", error }),
          onRight: (response) => response
        })
    }
  }

  const post = (message: RpcMessage, request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    // The envelope is read once: `_meta` decides the era, then the policy and the handler use the same value.
    const meta = message._tag === "Response" ? undefined : metaOf(message.params)
    const envelope = envelopeOf(request, meta)
    const policy = eraOf(meta, envelope.protocolVersion) === "modern" ? modern : legacy
    if (message._tag !== "Request") {
      // Notifications and responses get 202, with no body, once admitted.
      return Effect.match(policy.admitNotice(envelope), { onFailure: (r) => refused(null, r, forbiddenChallenge, request.headers), onSuccess: accepted })
    }
    const serve = (context: CallContext): Effect.Effect<EdgeResponse> =>
      Effect.match(dispatcher.dispatch(message, context), {
        onFailure: (failure) => refused(message.id, refusalOf(policy, failure, context.principal, activity), forbiddenChallenge, request.headers),
        onSuccess: (answer) => respond(policy, message, context, answer)
      })
    const admission = policy.admit(message, envelope)
    // Decided already (modern; legacy with its sessions here; bench: MCP get): served without running it as an Effect.
    if (Either.isEither(admission)) {
      return Either.isRight(admission) ? serve(admission.right) : Effect.succeed(refused(message.id, admission.left, forbiddenChallenge, request.headers))
    }
    return Effect.matchEffect(admission, { onFailure: (refusal) => Effect.succeed(refused(message.id, refusal, forbiddenChallenge, request.headers)), onSuccess: serve })
  }

  /** Messages the direct route read and then left to `postMessage`: not parsed twice. */
  const readAlready = new WeakMap<EdgeRequest, RpcMessage>()

  const postMessage = (request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    if (!acceptsBoth(request.headers.accept)) {
      return Effect.succeed(httpError(406, "Accept must allow both application/json and text/event-stream"))
    }
    if (!isJsonContentType(request.headers["content-type"])) return Effect.succeed(httpError(415, "Content-Type must be application/json"))
    const known = readAlready.get(request)
    if (known !== undefined) return post(known, request)
    const parsed = parseJsonBody(request.body, maxJsonDepth, request.bodyShape)
    if (Either.isLeft(parsed)) {
      const problem = parsed.left
      return Effect.succeed(refused(null, malformed(problem._tag === "TooDeep"
        ? new RpcError({ code: ErrorCode.InvalidRequest, message: describeBodyProblem(problem) })
        : new RpcError({ code: ErrorCode.ParseError, message: `Parse error: ${problem.message}` }))))
    }
    const message = classify(parsed.right)
    if (Either.isLeft(message)) return Effect.succeed(refused(idOf(parsed.right), malformed(message.left)))
    return post(message.right, request)
  }

  /** GET: the session's notification stream; DELETE: the end of the session. */
  const sessionRequest = (request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    const envelope = envelopeOf(request, undefined)
    if (request.method === "GET" && !accepts(request.headers.accept, "text/event-stream")) {
      return Effect.succeed(httpError(406, "Accept must allow text/event-stream"))
    }
    if (request.method === "GET" && request.principal !== undefined && streamsOf !== undefined) {
      const reached = streamRefused(request.principal.limits, streamsOf(request.principal))
      if (reached !== undefined) {
        activity?.count(request.principal.name, "limited")
        return Effect.succeed(refused(null, limitedRefusal(reached)))
      }
    }
    return legacy.session(envelope).pipe(
      Effect.flatMap((session) =>
        request.method === "GET"
          ? Effect.succeed(withHeaders(openSessionStream(session, headerValue(request.headers, LAST_EVENT_ID_HEADER), request.remoteAddress, request.principal), { [SESSION_HEADER]: session.id }))
          : sessions.terminate(session.id).pipe(
            Effect.as(empty(200)),
            Effect.catchIf(isStoreError, (e) => Effect.fail(storeDown(e)))
          )),
      Effect.catchAll((refusal) => Effect.succeed(refused(null, refusal, forbiddenChallenge, request.headers)))
    )
  }

  /**
   * POST /mcp without a fiber (edge.ts, DirectRoute), hand-tuned (bench/profile-run.ts mcp_get_modern: Effect's
   * run loop, fiber refs and runtime flags of the fiber per request were a quarter of an MCP get's CPU): a request whose admission is decided at once (modern; legacy with its sessions here) and that
   * the dispatcher answers with one JSON result (`dispatchNow`: tools/call without a key or progress,
   * resources/read). Anything else (a refusal by Accept or Content-Type, a malformed body, a notification, another
   * method, a session kept in the store) is left to the route below, with the message it read kept for it. The
   * answers are the ones `post` gives: the same `refused`, `rpcResult` and policy.
   */
  const direct: DirectRoute = (request, respond) => {
    const dispatchNow = dispatcher.dispatchNow
    if (dispatchNow === undefined || request.method !== "POST" || !acceptsBoth(request.headers.accept) || !isJsonContentType(request.headers["content-type"])) {
      return undefined
    }
    // The shape the edge scanned as the body arrived: its bytes are not read again for the depth check.
    const parsed = parseJsonBody(request.body, maxJsonDepth, request.bodyShape)
    if (Either.isLeft(parsed)) return undefined
    const classified = classify(parsed.right)
    if (Either.isLeft(classified)) return undefined
    const message = classified.right
    if (message._tag !== "Request" || (message.method !== Method.toolsCall && message.method !== Method.resourcesRead)) {
      readAlready.set(request, message)
      return undefined
    }
    const meta = metaOf(message.params)
    const envelope = envelopeOf(request, meta)
    const policy = eraOf(meta, envelope.protocolVersion) === "modern" ? modern : legacy
    const admission = policy.admit(message, envelope)
    if (!Either.isEither(admission)) {
      readAlready.set(request, message)
      return undefined
    }
    if (Either.isLeft(admission)) {
      respond.answer(refused(message.id, admission.left, forbiddenChallenge, request.headers))
      return noCancel
    }
    const cancel = dispatchNow(message, admission.right, new ReplyTo(respond, policy, message.id, admission.right.principal, activity, request.headers, forbiddenChallenge))
    if (cancel === undefined) readAlready.set(request, message)
    return cancel
  }

  /** The /mcp route. */
  const route = (request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    if (request.method === "POST") return postMessage(request)
    if (request.method !== "GET" && request.method !== "DELETE") {
      return Effect.succeed(httpError(405, `${request.method} is not supported on /mcp`, { allow: "POST" }))
    }
    // Without sessions, GET and DELETE mean nothing to a modern client.
    if (eraOf(undefined, headerValue(request.headers, PROTOCOL_VERSION_HEADER)) === "modern") {
      return Effect.succeed(httpError(
        405,
        `${request.method} is not used by MCP ${MODERN_VERSIONS[0]}: POST requests, and subscriptions/listen for notifications`,
        { allow: "POST" }
      ))
    }
    return sessionRequest(request)
  }
  return Object.assign(route, { direct })
}
