/**
 * A command as REST, MCP, app commands and decider specs send it, decoded into the intent the Decider takes:
 * the one Schema decode every surface shares (plus the input rules and guarded fields, before it).
 */
import { Either } from "effect"
import type { CompiledType } from "../compile.ts"
import type { Intent } from "./decider.ts"
import { guardedRefusal } from "../rules/guarded.ts"
import { ValidationFailed, type CommandError, type FieldIssue } from "../errors.ts"
import { inputIssues } from "../rules/input-rules.ts"

export type Command =
  | { readonly _tag: "Create"; readonly type: string; readonly input: unknown }
  | { readonly _tag: "Update"; readonly type: string; readonly id: string; readonly expectedVersion?: number; readonly input: unknown }
  | { readonly _tag: "Delete"; readonly type: string; readonly id: string; readonly expectedVersion?: number }
  | {
    readonly _tag: "Invoke"
    readonly type: string
    readonly id: string
    readonly method: string
    readonly expectedVersion?: number
    readonly input: unknown
  }

const invalid = (type: CompiledType, omitted = 0) => (issues: ReadonlyArray<FieldIssue>) => new ValidationFailed({ type: type.name, issues, omitted })

/**
 * A command decoded into the intent the Decider takes (the Schema decode REST, MCP and decider specs share).
 * `keysLeftOut`: keys of the input its surface counted but did not parse, all of them unknown to the type
 * (http/edge/excess-keys.ts); the decode refuses the input for the unknown keys it was given, and counts these too.
 */
export const toIntent = (type: CompiledType, command: Command, keysLeftOut = 0): Either.Either<Intent, CommandError> => {
  // Before the Schema decode: it accepts Infinity (the log would store null), and its Record copies drop `__proto__`.
  if (command._tag !== "Delete") {
    const issues = inputIssues(command.input)
    if (issues.length > 0) return Either.left(invalid(type)(issues))
  }
  // Fields only methods change: refused whoever sends the body (REST, MCP, an app command, a spec).
  if (command._tag === "Create" || command._tag === "Update") {
    const guarded = guardedRefusal(type, command._tag === "Create" ? "create" : "update", command._tag === "Update" ? command.id : "", command.input)
    if (guarded !== undefined) return Either.left(guarded)
  }
  switch (command._tag) {
    case "Create":
      return Either.mapBoth(type.decodeCreate(command.input ?? {}), {
        onLeft: invalid(type, keysLeftOut),
        onRight: (fields) => ({ _tag: "Create" as const, fields })
      })
    case "Update":
      return Either.mapBoth(type.decodePatch(command.input ?? {}), {
        onLeft: invalid(type, keysLeftOut),
        onRight: (patch) => ({ _tag: "Update" as const, patch })
      })
    case "Delete":
      return Either.right({ _tag: "Delete" })
    case "Invoke": {
      const method = type.methods.get(command.method)
      if (method === undefined) {
        return Either.left(new ValidationFailed({ type: type.name, issues: [{ path: [], message: `no method ${command.method}` }] }))
      }
      return Either.mapBoth(method.decodeParams(command.input ?? {}), {
        onLeft: invalid(type, keysLeftOut),
        onRight: (params) => ({ _tag: "Invoke" as const, method, params })
      })
    }
  }
}

