/**
 * The top-level routes: the health probes first (open to anyone, even without a known Host: a load balancer
 * probes by address; they tell nothing about the data), then Host validation for everything else, then
 * /api/* (REST), /mcp and /metrics, behind the bearer token when one is set.
 */
import { Effect } from "effect"
import { json, type EdgeRequest, type EdgeResponse } from "./edge/edge-types.ts"
import { WWW_AUTHENTICATE } from "./edge/auth.ts"
import type { Guards } from "./edge/guards.ts"
import type { DirectRoute } from "./edge/edge.ts"
import { edgeError } from "./edge/edge-error.ts"
import { COMMANDS_PREFIX, notFound } from "./rest/rest.ts"
import { HEALTH_PATHS } from "./routes/health.ts"
import { METRICS_PATH } from "./routes/metrics-route.ts"
import { BACKUP_PATH } from "../backup/control.ts"

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
}

const LIVE = json(200, { status: "ok" })

const forbidden = (request: EdgeRequest, message: string) => edgeError(request.path, 403, "Forbidden", message)

const unauthorized = (request: EdgeRequest): EdgeResponse =>
  edgeError(request.path, 401, "Unauthorized", "a valid bearer token is required (Authorization: Bearer <WO_AUTH_TOKEN>)", {
    "www-authenticate": WWW_AUTHENTICATE
  })

/** Host, Origin and the bearer token (on /mcp, /api/ and /metrics): the refusal, or undefined when all pass. */
const refusalOf = (guards: Guards, authorized: (authorization: string | undefined) => boolean, request: EdgeRequest): EdgeResponse | undefined => {
  if (!guards.hostAllowed(request.headers.host)) {
    return forbidden(request, `Host ${request.headers.host ?? "(none)"} is not this server (see WO_HOSTS)`)
  }
  const origin = request.headers.origin
  if (!guards.originAllowed(origin)) return forbidden(request, `Origin ${origin} is not allowed (see WO_MCP_ORIGINS)`)
  const protectedPath = request.path === "/mcp" || request.path.startsWith("/api/") || request.path === METRICS_PATH
  if (protectedPath && !authorized(request.headers.authorization)) return unauthorized(request)
  return undefined
}

export const makeRouter = (guards: Guards, routes: Routes, authorized: (authorization: string | undefined) => boolean = () => true) => (incoming: EdgeRequest): Effect.Effect<EdgeResponse> => {
  // HEAD is GET without a body (node:http drops the body itself), except on /mcp, where a GET opens a
  // session's stream and would replace the real one.
  if (incoming.method === "HEAD" && incoming.path === "/mcp") {
    return Effect.succeed(edgeError(incoming.path, 405, "MethodNotAllowed", "HEAD is not supported on /mcp", { allow: "GET, POST, DELETE" }))
  }
  const request = incoming.method === "HEAD" ? { ...incoming, method: "GET" } : incoming
  if (HEALTH_PATHS.has(request.path)) {
    if (routes.health) return routes.health(request)
    if (request.path !== "/readyz") return Effect.succeed(LIVE)
  }
  const refused = refusalOf(guards, authorized, request)
  if (refused !== undefined) return Effect.succeed(refused)
  if (request.path === "/mcp" && routes.mcp) return routes.mcp(request)
  // `/api/_...` is never a type (type names start with a letter): the console's read-only endpoints.
  if (request.path.startsWith("/api/") && !request.path.startsWith("/api/_")) return routes.rest(request)
  // App commands (commands across entity types) are writes: REST's, like the types' routes.
  if (request.path.startsWith(COMMANDS_PREFIX)) return routes.rest(request)
  if (request.path === METRICS_PATH && routes.metrics) return routes.metrics(request)
  if (request.path === BACKUP_PATH && routes.backup) return routes.backup(request)
  return routes.extra?.(request) ?? Effect.succeed(notFound(request))
}

/** The methods rest.ts's direct route takes: the row writes, app commands and a row's GET (HEAD goes the generic way). */
const DIRECT_METHODS = new Set(["GET", "POST", "PATCH", "DELETE"])

/** The routes that answer some requests without a fiber (edge.ts, DirectRoute). */
export interface DirectRoutes {
  readonly rest: DirectRoute
  /** POST /mcp (mcp/transport.ts). */
  readonly mcp?: DirectRoute
}

/**
 * The router's direct path (edge.ts, DirectRoute): a REST request or a POST to /mcp that passes the checks
 * `makeRouter` makes (the same `refusalOf`) goes to its direct route; any other, refusals included, is left to
 * `makeRouter`, which answers them.
 */
export const makeDirectRouter = (guards: Guards, routes: DirectRoutes, authorized: (authorization: string | undefined) => boolean = () => true): DirectRoute =>
  (request, respond) => {
    if (request.path === "/mcp") {
      return routes.mcp !== undefined && request.method === "POST" && refusalOf(guards, authorized, request) === undefined
        ? routes.mcp(request, respond)
        : undefined
    }
    return DIRECT_METHODS.has(request.method) && request.path.startsWith("/api/") &&
        (!request.path.startsWith("/api/_") || request.path.startsWith(COMMANDS_PREFIX)) &&
        refusalOf(guards, authorized, request) === undefined
      ? routes.rest(request, respond)
      : undefined
  }
