/**
 * fast-check arbitraries from the JSON Schemas our tools advertise (the subset the catalog generates: object,
 * string with enum or minLength, integer and number with bounds, boolean, null, array, anyOf). `valid` values satisfy the
 * schema; `invalid` values break it in exactly one named place, so a test knows why it must be refused.
 */
import fc from "fast-check"

export interface JsonSchema {
  readonly type?: string
  readonly properties?: Record<string, JsonSchema>
  readonly required?: ReadonlyArray<string>
  readonly additionalProperties?: boolean
  readonly items?: JsonSchema
  readonly enum?: ReadonlyArray<unknown>
  readonly minLength?: number
  readonly minimum?: number
  readonly maximum?: number
  readonly exclusiveMinimum?: number
  readonly anyOf?: ReadonlyArray<JsonSchema>
  readonly minProperties?: number
  readonly minItems?: number
}

export interface Overrides {
  /** Arbitraries for properties by name (e.g. ids that hit existing rows), used wherever the name appears. */
  readonly byName?: Record<string, fc.Arbitrary<unknown>>
}

const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "grapheme", maxLength: 8 }),
  fc.string({ unit: "binary", maxLength: 6 }),
  fc.constantFrom("", " ", "null", "0", "<script>", "'; DROP TABLE", "\u0000", "\ud800", "é✓🙂")
)

/** Values that satisfy `schema`. */
export const valid = (schema: JsonSchema, overrides: Overrides = {}): fc.Arbitrary<unknown> => {
  if (schema.enum) return fc.constantFrom(...schema.enum)
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s) => valid(s, overrides)))
  switch (schema.type) {
    case "null":
      return fc.constant(null)
    case "object": {
      const props = schema.properties ?? {}
      const shape: Record<string, fc.Arbitrary<unknown>> = {}
      for (const [k, s] of Object.entries(props)) shape[k] = overrides.byName?.[k] ?? valid(s, overrides)
      const record = fc.record(shape, { requiredKeys: [...(schema.required ?? [])] as Array<string> })
      return schema.minProperties ? record.filter((o) => Object.keys(o).length >= schema.minProperties!) : record
    }
    case "string":
      return schema.minLength ? text.filter((s) => [...s].length >= schema.minLength!) : text
    case "integer":
      return fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 })
    case "number":
      return fc.oneof(
        fc.double({ noNaN: true, noDefaultInfinity: true, min: schema.minimum, max: schema.maximum }),
        fc.integer({ min: -1000, max: 1000 })
      ).filter((n) => schema.exclusiveMinimum === undefined || n > schema.exclusiveMinimum)
    case "boolean":
      return fc.boolean()
    case "array":
      return fc.array(valid(schema.items ?? {}, overrides), { minLength: schema.minItems ?? 0, maxLength: Math.max(4, schema.minItems ?? 0) })
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

export interface Broken {
  readonly value: unknown
  /** Where and how the value breaks the schema. */
  readonly why: string
}

const notA = (type: string | undefined): fc.Arbitrary<unknown> => {
  const all: Record<string, fc.Arbitrary<unknown>> = {
    string: fc.string({ maxLength: 4 }),
    number: fc.double({ noNaN: true, noDefaultInfinity: true }),
    integer: fc.integer(),
    boolean: fc.boolean(),
    null: fc.constant(null),
    array: fc.array(fc.integer(), { maxLength: 2 }),
    object: fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 })
  }
  const excluded = type === "number" ? ["number", "integer"] : type === "integer" ? ["integer"] : [type ?? ""]
  return fc.oneof(...Object.entries(all).filter(([k]) => !excluded.includes(k)).map(([, a]) => a))
}

/** Values that break `schema` in exactly one place. */
export const invalid = (schema: JsonSchema, overrides: Overrides = {}, at = "arguments"): fc.Arbitrary<Broken> => {
  const options: Array<fc.Arbitrary<Broken>> = [notA(schema.enum ? "string" : schema.type).map((value) => ({ value, why: `${at}: not a ${schema.type}` }))]
  if (schema.enum) {
    options.push(fc.string({ maxLength: 8 }).filter((s) => !schema.enum!.includes(s)).map((value) => ({ value, why: `${at}: not in the enum` })))
  }
  switch (schema.type) {
    case "object": {
      const props = Object.entries(schema.properties ?? {})
      const required = schema.required ?? []
      const base = valid(schema, overrides) as fc.Arbitrary<Record<string, unknown>>
      if (required.length) {
        options.push(fc.tuple(base, fc.constantFrom(...required)).map(([o, k]) => {
          const { [k]: _dropped, ...rest } = o
          return { value: rest, why: `${at}.${k}: required, missing` }
        }))
      }
      if (schema.additionalProperties === false) {
        const names = new Set(props.map(([k]) => k))
        options.push(fc.tuple(base, fc.string({ minLength: 1, maxLength: 6 }).filter((k) => !names.has(k) && k !== "__proto__"), fc.jsonValue({ maxDepth: 1 }))
          .map(([o, k, v]) => ({ value: { ...o, [k]: v }, why: `${at}.${k}: not allowed` })))
      }
      if (props.length) {
        options.push(fc.constantFrom(...props).chain(([k, s]) =>
          fc.tuple(base, invalid(s, overrides, `${at}.${k}`)).map(([o, broken]) => ({ value: { ...o, [k]: broken.value }, why: broken.why }))))
      }
      break
    }
    case "string":
      if (schema.minLength) options.push(fc.constant({ value: "", why: `${at}: shorter than ${schema.minLength}` }))
      break
    case "integer":
      options.push(fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Number.isInteger(n)).map((value) => ({ value, why: `${at}: not an integer` })))
      if (schema.minimum !== undefined) options.push(fc.integer({ min: -1000, max: schema.minimum - 1 }).map((value) => ({ value, why: `${at}: below ${schema.minimum}` })))
      if (schema.maximum !== undefined) options.push(fc.integer({ min: schema.maximum + 1, max: schema.maximum + 1000 }).map((value) => ({ value, why: `${at}: above ${schema.maximum}` })))
      break
    case "array":
      options.push(fc.tuple(fc.array(valid(schema.items ?? {}, overrides), { maxLength: 3 }), invalid(schema.items ?? {}, overrides, `${at}[]`), fc.nat())
        .map(([xs, broken, i]) => {
          const out = [...xs]
          out.splice(i % (xs.length + 1), 0, broken.value)
          return { value: out, why: broken.why }
        }))
      break
  }
  return fc.oneof(...options)
}
