/**
 * The top-level routes: the health probes first (open to anyone, even without a known Host: a load balancer
 * probes by address; they tell nothing about the data), then Host validation for everything else, then
 * authentication and authorization on /api/*, /mcp and /metrics (access/: the principal is attached to the
 * request, and the operation its method and path ask for must be granted) and on the embedding program's own
 * routes (any authenticated principal), then the routes.
 */
import { Effect } from "effect"
import { json, type EdgeRequest, type EdgeResponse } from "./edge/edge-types.ts"
import type { Guards } from "./edge/guards.ts"
import type { DirectRoute } from "./edge/edge.ts"
import { edgeError } from "./edge/edge-error.ts"
import { COMMANDS_PREFIX, notFound } from "./rest/rest.ts"
import { VIEWS_PATH } from "./rest/view-routes.ts"
import { HEALTH_PATHS } from "./routes/health.ts"
import { METRICS_PATH } from "./routes/metrics-route.ts"
import { BACKUP_PATH } from "../backup/control.ts"
import { Access, type AccessShape } from "../access/access.ts"
import { ANY, requestOperation } from "../access/operations.ts"
import { may, type Principal } from "../access/principal.ts"
import type { Operation } from "../access/grants.ts"
import { credentialsUnavailable, forbidden, limited, unauthorized } from "./edge/access-refusals.ts"
import { CredentialRefused } from "../access/credentials.ts"
import { takeWrite } from "../access/rate-limits.ts"
import { noCancel } from "../support/no-cancel.ts"

export interface Routes {
  readonly rest: (request: EdgeRequest) => Effect.Effect<EdgeResponse>
  readonly mcp?: (request: EdgeRequest) => Effect.Effect<EdgeResponse>
  readonly extra?: (request: EdgeRequest) => Effect.Effect<EdgeResponse> | undefined
  /** /livez, /readyz, /healthz (health.ts); without it /healthz and /livez answer 200. */
  readonly health?: (request: EdgeRequest) => Effect.Effect<EdgeResponse>
  /** GET /metrics (metrics-route.ts). */
  readonly metrics?: (request: EdgeRequest) => Effect.Effect<EdgeResponse>
  /** `wo backup`'s endpoint (backup-route.ts): its own token, this machine only. */
  readonly backup?: (request: EdgeRequest) => Effect.Effect<EdgeResponse>
  /** OAuth's protected resource metadata (oauth-metadata-route.ts): an answer for its path, else undefined. */
  readonly oauthMetadata?: (request: EdgeRequest) => Effect.Effect<EdgeResponse> | undefined
  /** The embedding program's own routes (embedding/custom-routes.ts): every path `serves` says the server leaves them. */
  readonly custom?: CustomRoute
}

export interface CustomRoute {
  readonly handle: (request: EdgeRequest) => Effect.Effect<EdgeResponse>
  /** Whether the request's path is theirs: none the server serves itself. It takes any authenticated principal. */
  readonly serves: (request: EdgeRequest) => boolean
}

const LIVE = json(200, { status: "ok" })

const refuse = (request: EdgeRequest, message: string) => edgeError(request.path, 403, "Forbidden", message)

/** Host and Origin: the refusal, or undefined when both pass. */
const guardRefusal = (guards: Guards, request: EdgeRequest): EdgeResponse | undefined => {
  if (!guards.hostAllowed(request.headers.host)) {
    return refuse(request, `Host ${request.headers.host ?? "(none)"} is not this server (see WO_HOSTS)`)
  }
  const origin = request.headers.origin
  if (!guards.originAllowed(origin)) return refuse(request, `Origin ${origin} is not allowed (see WO_MCP_ORIGINS)`)
  return undefined
}

/**
 * The operation the request asks for checked against its principal (and a write against the principal's writes a
 * second): the refusal (401, 403, 429), or undefined when it may go on, with the principal attached to the
 * request. Attached by assignment: the edge made the request with its `principal` slot, so the object keeps its
 * shape on the hot path.
 */
const admit = (access: AccessShape, request: EdgeRequest, op: Operation | typeof ANY, principal: Principal | CredentialRefused | undefined): EdgeResponse | undefined => {
  const challenges = access.challenges
  if (principal instanceof CredentialRefused) {
    if (principal.unavailable) return credentialsUnavailable(request.path, principal.reason)
    return unauthorized(request.path, challenges?.unauthorized(request.headers, principal.reason), principal.reason)
  }
  if (principal === undefined) return unauthorized(request.path, challenges?.unauthorized(request.headers))
  if (op !== ANY && !may(principal, op)) {
    access.activity?.count(principal.name, "forbidden")
    return forbidden(op, challenges === undefined ? undefined : (grants) => challenges.forbidden(grants, request.headers))
  }
  if (op !== ANY && (op._tag === "Write" || op._tag === "Command") && principal.limits !== undefined) {
    const reached = takeWrite(principal.limits)
    if (reached !== undefined) {
      access.activity?.count(principal.name, "limited")
      return limited(reached)
    }
  }
  access.activity?.count(principal.name, "admitted")
  // Only once admitted: a request carrying a principal is one that passed (see `refusalOf`).
  ;(request as { principal?: Principal }).principal = principal
  return undefined
}

/**
 * Host, Origin and the credential: the refusal, undefined when all pass, or the verification still to run (a
 * credential source that checks asynchronously, as OAuth the first time it sees a token).
 */
const refusalOf = (guards: Guards, access: AccessShape, request: EdgeRequest, custom?: CustomRoute): EdgeResponse | undefined | Effect.Effect<EdgeResponse | undefined> => {
  const guarded = guardRefusal(guards, request)
  if (guarded !== undefined) return guarded
  // Authenticated already (the direct route passed it on): not again.
  if (!access.required || request.principal !== undefined) return undefined
  const op = requestOperation(request.method, request.path, METRICS_PATH) ?? (custom?.serves(request) ? ANY : undefined)
  if (op === undefined) return undefined
  const found = access.authenticate(request.headers.authorization, request.connection)
  return Effect.isEffect(found) ? Effect.map(found, (p) => admit(access, request, op, p)) : admit(access, request, op, found)
}

export const makeRouter = (guards: Guards, routes: Routes, access: AccessShape = Access.open) => (incoming: EdgeRequest): Effect.Effect<EdgeResponse> => {
  // HEAD is GET without a body (node:http drops the body itself), except on /mcp, where a GET opens a
  // session's stream and would replace the real one.
  if (incoming.method === "HEAD" && incoming.path === "/mcp") {
    return Effect.succeed(edgeError(incoming.path, 405, "MethodNotAllowed", "HEAD is not supported on /mcp", { allow: "GET, POST, DELETE" }))
  }
  const request: EdgeRequest = incoming.method === "HEAD" ? { ...incoming, method: "GET" } : incoming
  if (HEALTH_PATHS.has(request.path)) {
    if (routes.health) return routes.health(request)
    if (request.path !== "/readyz") return Effect.succeed(LIVE)
  }
  // OAuth's protected resource metadata: the discovery a client makes before it has a token.
  const metadata = routes.oauthMetadata?.(request)
  if (metadata !== undefined) return metadata
  const refused = refusalOf(guards, access, request, routes.custom)
  if (refused === undefined) return route(routes, request)
  return Effect.isEffect(refused)
    ? Effect.flatMap(refused, (r) => (r === undefined ? route(routes, request) : Effect.succeed(r)))
    : Effect.succeed(refused)
}

const route = (routes: Routes, request: EdgeRequest): Effect.Effect<EdgeResponse> => {
  if (request.path === "/mcp" && routes.mcp) return routes.mcp(request)
  // `/api/_...` is never a type (type names start with a letter): the console's read-only endpoints.
  if (request.path.startsWith("/api/") && !request.path.startsWith("/api/_")) return routes.rest(request)
  // App commands (commands across entity types) are writes: REST's, like the types' routes.
  if (request.path.startsWith(COMMANDS_PREFIX)) return routes.rest(request)
  if (request.path === METRICS_PATH && routes.metrics) return routes.metrics(request)
  if (request.path === BACKUP_PATH && routes.backup) return routes.backup(request)
  return routes.extra?.(request) ?? (routes.custom?.serves(request) ? routes.custom.handle(request) : Effect.succeed(notFound(request)))
}

/** The methods rest.ts's direct route takes: the row writes, app commands and a row's GET (HEAD goes the generic way). */
const DIRECT_METHODS = new Set(["GET", "POST", "PATCH", "DELETE"])

/** The routes that answer some requests without a fiber (edge.ts, DirectRoute). */
export interface DirectRoutes {
  readonly rest: DirectRoute
  /** POST /mcp (mcp/transport.ts). */
  readonly mcp?: DirectRoute
  /** GET of one whole view (rest/view-routes.ts). */
  readonly views?: DirectRoute
}

/**
 * The router's direct path (edge.ts, DirectRoute): a REST request, a view's GET or a POST to /mcp that passes the
 * checks `makeRouter` makes (the same `refusalOf`: Host, Origin, credential and grant) goes to its direct route, and one
 * they refuse is answered here with the same refusal (judged once: each refusal is counted once, and a write
 * refused over its limit takes nothing from it twice). Any other, a credential still to verify included, is left
 * to `makeRouter`.
 */
export const makeDirectRouter = (guards: Guards, routes: DirectRoutes, access: AccessShape = Access.open): DirectRoute =>
  (request, respond) => {
    const route = request.path === "/mcp"
      ? (request.method === "POST" ? routes.mcp : undefined)
      : request.path.startsWith(`${VIEWS_PATH}/`)
      ? (request.method === "GET" ? routes.views : undefined)
      : DIRECT_METHODS.has(request.method) && request.path.startsWith("/api/") &&
          (!request.path.startsWith("/api/_") || request.path.startsWith(COMMANDS_PREFIX))
      ? routes.rest
      : undefined
    if (route === undefined) return undefined
    const refused = refusalOf(guards, access, request)
    if (refused === undefined) return route(request, respond)
    if (Effect.isEffect(refused)) return undefined
    respond.answer(refused)
    return noCancel
  }
