/**
 * JSON Schema for the wire, derived from Effect Schema. `JSONSchema.make` does the mapping; we inline its
 * `$defs` because MCP clients handle self-contained schemas best, and drop `$schema` from nested use. Two things
 * it leaves out are put back: a struct field's default (`Schema.optionalWith(..., { default })`) as `default`,
 * and the real type of such a field, which it wraps in a one-element `allOf` that readers (and some clients)
 * take for "any".
 */
import { Either, JSONSchema, Schema } from "effect"

export type JsonSchema = { readonly [key: string]: unknown }

/** Throws (with Effect's message naming the path) when a schema has no JSON Schema mapping. */
export const toJsonSchema = (schema: Schema.Schema.Any): JsonSchema => {
  const { $schema: _ignored, $defs, ...root } = JSONSchema.make(schema) as unknown as Record<string, unknown>
  const inlined = flattenAllOf(inlineRefs(root, ($defs ?? {}) as Record<string, unknown>, [])) as JsonSchema
  return "fields" in schema ? withDefaults(inlined, (schema as unknown as Schema.Struct<Schema.Struct.Fields>).fields) : inlined
}

/**
 * The wire value of a field's default, or nothing: the field alone decoded from `{}` and encoded back, as plain
 * JSON. A default computed from the clock is shown as computed when the catalog compiles. The default is user
 * code: one that throws, or makes no JSON, is left out here (a write that needs it reports it).
 */
const defaultOf = (name: string, field: Schema.Struct.Fields[string]): { readonly value: unknown } | undefined => {
  try {
    // Catalog fields need no services (compile.ts checks them); decoding `{}` runs no user code but the default.
    const alone = Schema.Struct({ [name]: field }) as unknown as Schema.Schema<Record<string, unknown>, Record<string, unknown>>
    const decoded = Schema.decodeUnknownEither(alone)({})
    if (Either.isLeft(decoded) || !Object.hasOwn(decoded.right, name)) return undefined
    const encoded = Schema.encodeEither(alone)(decoded.right)
    if (Either.isLeft(encoded) || !Object.hasOwn(encoded.right, name)) return undefined
    const json = JSON.stringify(encoded.right[name])
    return json === undefined ? undefined : { value: JSON.parse(json) }
  } catch {
    return undefined
  }
}

/** A struct's JSON Schema with each defaulted field's `default`. */
const withDefaults = (schema: JsonSchema, fields: Schema.Struct.Fields): JsonSchema => {
  const properties = schema.properties as Record<string, JsonSchema> | undefined
  if (properties === undefined) return schema
  const withDefault = Object.fromEntries(Object.entries(properties).map(([name, property]) => {
    const found = Object.hasOwn(fields, name) ? defaultOf(name, fields[name]) : undefined
    return [name, found === undefined ? property : { ...property, default: found.value }]
  }))
  return { ...schema, properties: withDefault }
}

/** `{ allOf: [X], ...notes }` read as X with the notes: what JSONSchema.make makes of a refined optional field. */
const flattenAllOf = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(flattenAllOf)
  if (typeof node !== "object" || node === null) return node
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(node)) out[k] = flattenAllOf(v)
  const allOf = out.allOf
  if (!Array.isArray(allOf) || allOf.length !== 1 || typeof allOf[0] !== "object" || allOf[0] === null) return out
  const { allOf: _single, ...notes } = out
  return { ...(allOf[0] as Record<string, unknown>), ...notes }
}

const inlineRefs = (node: unknown, defs: Record<string, unknown>, seen: ReadonlyArray<string>): unknown => {
  if (Array.isArray(node)) return node.map((n) => inlineRefs(n, defs, seen))
  if (typeof node !== "object" || node === null) return node
  const ref = (node as { $ref?: unknown }).$ref
  if (typeof ref === "string" && ref.startsWith("#/$defs/")) {
    const name = ref.slice("#/$defs/".length)
    if (seen.includes(name)) throw new Error(`recursive schema ${name} cannot be inlined`)
    // Keys beside the $ref refine it (`minimum` of a nonNegative Int): they stay.
    const { $ref: _ref, ...refinements } = node as Record<string, unknown>
    return { ...(inlineRefs(defs[name], defs, [...seen, name]) as object), ...(inlineRefs(refinements, defs, seen) as object) }
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
