/** Assembles the /mcp route from the catalog and the shared services: tools, resources, dispatch, transports. */
import type { CompiledApp } from "../../domain/compile.ts"
import type { CommandsShape } from "../../commands/commands.ts"
import type { Settings } from "../../config.ts"
import type { QueriesShape } from "../../projections/queries.ts"
import type { RowsShape } from "../../projections/rows.ts"
import { makeDispatcher } from "./dispatch.ts"
import { makeMcpEndpoint } from "./endpoint.ts"
import { makeLegacy } from "./legacy.ts"
import { makeResources } from "./resources.ts"
import { makeTools } from "./tools.ts"

export interface McpDeps {
  readonly catalog: CompiledApp
  readonly commands: CommandsShape
  readonly queries: QueriesShape
  readonly rows: RowsShape
  readonly settings: Settings
}

export const makeMcpRoute = ({ catalog, commands, queries, rows, settings }: McpDeps) => {
  const tools = makeTools(catalog, commands, queries, settings.maxPageSize)
  const dispatcher = makeDispatcher(tools, makeResources(catalog, rows, settings.defaultPageSize))
  return makeMcpEndpoint({ legacy: makeLegacy(catalog, dispatcher) })
}
