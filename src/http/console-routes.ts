/** The console's routes (`/`, its assets, `/api/_events`, `/api/_agents`). Placeholder until the console lands. */
import { Effect } from "effect"
import type { EdgeRequest, EdgeResponse } from "./edge-types.ts"

export const makeConsoleRoutes = Effect.succeed((_request: EdgeRequest): Effect.Effect<EdgeResponse> | undefined => undefined)
