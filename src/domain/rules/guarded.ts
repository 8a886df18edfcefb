/**
 * Guarded fields: fields only the type's methods change. The generic create and update refuse a body that sets
 * one (the domain's refusal, 422 `guarded_field`), whoever sends it: REST, MCP, an app command, a decider spec.
 * A create sets them from their default. The refusal points at what a caller can use instead: the methods exposed
 * (on REST or MCP) that change those fields (a method that declares its `changes` changes only those).
 */
import type { CompiledType } from "../compile.ts"
import { Rejected } from "../errors.ts"

export const GUARDED_FIELD = "guarded_field"

/** The type's exposed methods that may change one of `fields`. */
export const methodsChanging = (type: CompiledType, fields: ReadonlyArray<string>): ReadonlyArray<string> =>
  [...type.methods.values()]
    .filter((m) => (type.rest.has(m.name) || type.mcp.has(m.name)) && (m.changes === undefined || fields.some((f) => m.changes!.has(f))))
    .map((m) => m.name)

/** The refusal of a create or update body that sets a guarded field, or undefined when it sets none. */
export const guardedRefusal = (type: CompiledType, operation: "create" | "update", id: string, input: unknown): Rejected | undefined => {
  const guarded = type.rules.guarded
  if (guarded.size === 0 || typeof input !== "object" || input === null) return undefined
  const set = [...guarded].filter((field) => Object.hasOwn(input, field))
  if (set.length === 0) return undefined
  const methods = methodsChanging(type, set)
  const which = `${set.join(", ")} ${set.length === 1 ? "is" : "are"} changed only by methods`
  return new Rejected({
    type: type.name,
    id,
    operation,
    code: GUARDED_FIELD,
    reason: methods.length > 0 ? `${which}: ${methods.join(", ")}` : `${which} (no method of ${type.name} that changes ${set.length === 1 ? "it" : "them"} is exposed)`
  })
}
