/**
 * The program's own routes on the server's port: an `@effect/platform` HttpRouter (any HttpApp) given to
 * `writeOnceLayer(app, settings, { routes: (wo) => router })`, served beside `/api` and `/mcp` behind the same edge
 * (Host and Origin checks, body limits, the credential). Every path the server does not serve itself is theirs.
 *
 * When the server requires a credential (a token or an access file), a custom route takes any authenticated
 * principal, whatever its grants, and its handler reads who it is with `yield* Caller` (`principal` is undefined on
 * a server that requires none); the handler decides what that principal may do there (`may(principal, op)`).
 */
// By its module path, not the package's index: the index's declarations reach modules typed with the DOM's globals
// (Storage, Transferable), which an app compiled for Node without skipLibCheck does not have.
import * as HttpApp from "@effect/platform/HttpApp"
import { Context, Effect, Layer, type Scope } from "effect"
import type { AppDef } from "../domain/catalog.ts"
import type { Principal } from "../access/principal.ts"
import type { EdgeRequest, EdgeResponse } from "../http/edge/edge-types.ts"
import { CustomRoutes } from "../http/routes/custom-routes.ts"
import { WriteOnce, type WriteOnceApi } from "./write-once.ts"

/** Who calls a custom route: the principal the edge authenticated, if the server requires a credential. */
export class Caller extends Context.Tag("writeonce/Caller")<Caller, { readonly principal: Principal | undefined }>() {}

/** The program's routes, made once from the typed API of its app. */
export type RoutesOf<A extends AppDef> = (wo: WriteOnceApi<A>) => HttpApp.Default<unknown, Caller | Scope.Scope>

const BODYLESS = new Set(["GET", "HEAD"])

/** The edge's request as the web Request an HttpApp's web handler takes (the edge has read the body already). */
const toWebRequest = (request: EdgeRequest): Request => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v)
  }
  const search = request.search ?? (request.query.size > 0 ? `?${request.query}` : "")
  let url: URL
  try {
    url = new URL(`http://${request.headers.host ?? "localhost"}${request.path}${search}`)
  } catch {
    // The edge admitted its Host already; one a URL cannot hold still names this server.
    url = new URL(`http://localhost${request.path}${search}`)
  }
  const body = BODYLESS.has(request.method) || request.body.length === 0 ? undefined : new Uint8Array(request.body)
  return new Request(url, { method: request.method, headers, body })
}

const fromWebResponse = async (response: Response): Promise<EdgeResponse> => ({
  _tag: "Buffered",
  status: response.status,
  headers: Object.fromEntries(response.headers),
  body: await response.text()
})

/** The routes `routes` makes from the typed API of `app`, over the runtime in context. */
export const customRoutesLayer = <A extends AppDef>(app: A, routes: RoutesOf<A>) =>
  Layer.effect(
    CustomRoutes,
    Effect.gen(function* () {
      const wo = yield* WriteOnce.of(app)
      const runtime = yield* Effect.runtime<never>()
      // `Caller` is given per request, in the context the web handler adds to the request's own.
      const handler = HttpApp.toWebHandlerRuntime(runtime)(routes(wo) as HttpApp.Default<unknown, Scope.Scope>)
      return {
        handle: (request) =>
          Effect.promise(() => handler(toWebRequest(request), Context.make(Caller, { principal: request.principal }) as Context.Context<never>).then(fromWebResponse))
      }
    })
  )
