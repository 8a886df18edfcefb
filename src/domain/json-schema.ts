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
 * JSON. The default is user code: one that throws, or makes no JSON, is left out here (a write that needs it
 * reports it).
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

/** How near "now" a default must be to be taken for the clock's (a timestamp made when the catalog compiled). */
const CLOCK_WINDOW_MS = 60_000

/** A default value that is the time of the call: an ISO date or epoch milliseconds within a minute of now. */
const looksLikeNow = (value: unknown, now: number) => {
  const at = typeof value === "string" && /^\d{4}-\d\d-\d\dT/.test(value) ? Date.parse(value) : typeof value === "number" && value > 1e12 ? value : Number.NaN
  return Math.abs(at - now) <= CLOCK_WINDOW_MS
}

/** What a field computed at each write says instead of a `default` that would be one value taken at compile time. */
export const COMPUTED_DEFAULT = "When absent, a value computed at each create is used (the time of the create, for instance), not a constant."

/**
 * A struct's JSON Schema with each defaulted field's `default`. A default computed at each write (the clock, a
 * random id) is no constant: advertised as one value, a client would send it back as if it were. It is told from a
 * constant by computing it twice, and by a value that is the present time; such a field is described instead.
 */
const withDefaults = (schema: JsonSchema, fields: Schema.Struct.Fields): JsonSchema => {
  const properties = schema.properties as Record<string, JsonSchema> | undefined
  if (properties === undefined) return schema
  const now = Date.now()
  const withDefault = Object.fromEntries(Object.entries(properties).map(([name, property]) => {
    const found = Object.hasOwn(fields, name) ? defaultOf(name, fields[name]) : undefined
    if (found === undefined) return [name, property]
    const again = defaultOf(name, fields[name])
    const computed = again === undefined || JSON.stringify(again.value) !== JSON.stringify(found.value) || looksLikeNow(found.value, now)
    if (!computed) return [name, { ...property, default: found.value }]
    const description = typeof property.description === "string" ? `${property.description}. ${COMPUTED_DEFAULT}` : COMPUTED_DEFAULT
    return [name, { ...property, description }]
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
