/**
 * What the model reads when a tool call is refused. Many clients show it only the result's text, never `_meta`,
 * so the text names the refusal's code and the next step, in this app's own tool names (only tools it serves):
 * re-read a row that moved with `<type>_get`, look for an existing id with `<type>_list`, call the method that
 * changes a guarded field.
 */
import type { CompiledApp } from "../../domain/compile.ts"
import { methodsChanging, GUARDED_FIELD } from "../../domain/rules/guarded.ts"
import { MISSING_REFERENCE, STILL_REFERENCED } from "../../commands/reference-check.ts"
import type { CommandError, NotFound, ValidationFailed } from "../../domain/errors.ts"

/** The MCP tool of `type`'s operation `op`, when the app serves one. */
const toolOf = (app: CompiledApp, type: string, op: string): string | undefined =>
  app.types.get(type)?.mcp.has(op) === true ? `${type}_${op}` : undefined

/** What an agent can do about the refusal, as a sentence, or undefined when no tool of the app helps. */
const nextStep = (app: CompiledApp, error: CommandError | NotFound | ValidationFailed): string | undefined => {
  switch (error._tag) {
    case "VersionConflict": {
      const get = toolOf(app, error.type, "get")
      return `Read it again${get === undefined ? "" : ` with ${get}`}; if the change still applies, retry with expectedVersion ${error.actual}.`
    }
    case "NotFound": {
      const list = toolOf(app, error.type, "list")
      return list === undefined ? undefined : `Find an existing id with ${list}.`
    }
    case "Rejected": {
      if (error.code === MISSING_REFERENCE && error.target !== undefined) {
        const list = toolOf(app, error.target, "list")
        return list === undefined ? undefined : `Find an existing id with ${list}.`
      }
      if (error.code === GUARDED_FIELD) {
        const type = app.types.get(error.type)
        const tools = type === undefined ? [] : methodsChanging(type, [...type.rules.guarded]).flatMap((m) => toolOf(app, error.type, m) ?? [])
        return tools.length === 0 ? undefined : `Call ${tools.join(" or ")} instead.`
      }
      // Its message names the rows that still reference it: nothing more to say.
      if (error.code === STILL_REFERENCED) return undefined
      // A refused create made no row to read.
      const get = error.id === "" || error.operation === "create" ? undefined : toolOf(app, error.type, "get")
      return get === undefined ? undefined : `Read ${error.type} ${error.id} with ${get} to see its current state before trying again.`
    }
    default:
      return undefined
  }
}

/**
 * The text of a refused tool call. A refusal about the data (a domain rule, a stale version, a missing row): the
 * message, its code, and the next step when there is one. Any other (invalid arguments, a reused key, the app's
 * bug, the store) says what to do in its message already: the message alone.
 */
export const refusalText = (app: CompiledApp | undefined, error: CommandError | NotFound | ValidationFailed): string => {
  if (error._tag !== "Rejected" && error._tag !== "VersionConflict" && error._tag !== "NotFound") return error.message
  const next = app === undefined ? undefined : nextStep(app, error)
  const code = error._tag === "Rejected" ? `Rejected: ${error.code}` : error._tag
  return `${error.message} (${code}).${next === undefined ? "" : ` ${next}`}`
}
