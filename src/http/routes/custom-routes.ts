/**
 * The embedding program's own routes, as the router mounts them: one edge handler for every path the server does
 * not serve itself (embedding/custom-routes.ts makes it from an HttpRouter). Absent: those paths answer 404.
 */
import { Context, type Effect } from "effect"
import type { EdgeRequest, EdgeResponse } from "../edge/edge-types.ts"

export interface CustomRoutesShape {
  readonly handle: (request: EdgeRequest) => Effect.Effect<EdgeResponse>
}

export class CustomRoutes extends Context.Tag("writeonce/CustomRoutes")<CustomRoutes, CustomRoutesShape>() {}
