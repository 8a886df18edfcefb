/**
 * A tool as the MCP server holds it: what tools/list shows of it (its definition), what calling it asks (its
 * operation), and how it is called, with a fiber or without one (tools.ts makes the catalog's tools).
 */
import type { Cause, Effect } from "effect"
import type { JsonSchema } from "../../domain/json-schema.ts"
import type { ExecuteOptions } from "../../commands/commands.ts"
import type { Operation as Granted } from "../../access/grants.ts"
import type { ToolResult } from "./tool-results.ts"

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
