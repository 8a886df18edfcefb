/**
 * JSON Schema for the wire, derived from Effect Schema. `JSONSchema.make` does the mapping; we inline its
 * `$defs` because MCP clients handle self-contained schemas best, and drop `$schema` from nested use.
 */
import { JSONSchema, type Schema } from "effect"

export type JsonSchema = { readonly [key: string]: unknown }

/** Throws (with Effect's message naming the path) when a schema has no JSON Schema mapping. */
export const toJsonSchema = (schema: Schema.Schema.Any): JsonSchema => {
  const { $schema: _ignored, $defs, ...root } = JSONSchema.make(schema) as unknown as Record<string, unknown>
  return inlineRefs(root, ($defs ?? {}) as Record<string, unknown>, []) as JsonSchema
}

const inlineRefs = (node: unknown, defs: Record<string, unknown>, seen: ReadonlyArray<string>): unknown => {
  if (Array.isArray(node)) return node.map((n) => inlineRefs(n, defs, seen))
  if (typeof node !== "object" || node === null) return node
  const ref = (node as { $ref?: unknown }).$ref
  if (typeof ref === "string" && ref.startsWith("#/$defs/")) {
    const name = ref.slice("#/$defs/".length)
    if (seen.includes(name)) throw new Error(`recursive schema ${name} cannot be inlined`)
    return inlineRefs(defs[name], defs, [...seen, name])
  }
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(node)) out[k] = inlineRefs(v, defs, seen)
  return out
}

/** An object schema without some of its properties (a create's or update's input without the guarded fields). */
export const withoutProperties = (schema: JsonSchema, names: ReadonlySet<string>): JsonSchema => {
  if (names.size === 0) return schema
  const properties = (schema.properties ?? {}) as Record<string, unknown>
  const required = schema.required as ReadonlyArray<string> | undefined
  return {
    ...schema,
    properties: Object.fromEntries(Object.entries(properties).filter(([k]) => !names.has(k))),
    ...(required === undefined ? {} : { required: required.filter((k) => !names.has(k)) })
  }
}
