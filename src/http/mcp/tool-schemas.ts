/**
 * The arguments and results every type's tools share, as Effect Schemas: arguments are decoded with them and the
 * tools' JSON Schemas are derived from them, so the two cannot disagree. Also the JSON Schema shapes the tools
 * carry (closed argument objects, open results) and the list tool's filter schemas, from the catalog.
 */
import { Schema } from "effect"
import type { CompiledType } from "../../domain/compile.ts"
import { toJsonSchema, type JsonSchema } from "../../domain/json-schema.ts"
import type { FilterableField } from "../../domain/filterable.ts"
import { MAX_IN_VALUES, orderChoices, type Listable } from "../../domain/list-request.ts"

const Id = Schema.String.pipe(Schema.minLength(1)).annotations({ description: "the row's id" })
const ExpectedVersion = Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1))
  .annotations({ description: "fail with a conflict unless the row is at this version" })
const Version = Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1)).annotations({ description: "the row's version: 1 when created, one more per change" })
const Target = Schema.Struct({ id: Id, expectedVersion: Schema.optional(ExpectedVersion) })
const IdOnly = Schema.Struct({ id: Id })
const RowKeys = Schema.Struct({ id: Id, version: Version })
const Deleted = Schema.Struct({ id: Id, version: Schema.Number.pipe(Schema.int()).annotations({ description: "the row's final version" }), deleted: Schema.Boolean })
/** `where` and `order` are checked against the catalog afterwards (domain/list-request.ts). */
export const pageArgs = (maxPageSize: number) =>
  Schema.Struct({
    cursor: Schema.optional(Schema.String.annotations({ description: "nextCursor from the previous page (of the same where and order)" })),
    limit: Schema.optional(Schema.Number.pipe(
      Schema.int(),
      Schema.between(1, maxPageSize, { message: () => `must be an integer from 1 to ${maxPageSize}` })
    ).annotations({ description: "rows per page" })),
    where: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
    order: Schema.optional(Schema.String)
  })
/** No arguments at all: `{}` (an empty Struct lets any key through, so the keys are checked too). */
const NoArguments = Schema.Struct({}).pipe(Schema.filter((args) => Object.keys(args).length === 0 || `takes no arguments, got ${Object.keys(args).join(", ")}`))

/** `{id, expectedVersion?}`, other keys let through (they are the change). */
export const decodeTarget = Schema.decodeUnknownEither(Target)
export const decodeIdOnly = Schema.decodeUnknownEither(IdOnly, { onExcessProperty: "error" })
export const decodeTargetOnly = Schema.decodeUnknownEither(Target, { onExcessProperty: "error" })
export const decodeNoArguments = Schema.decodeUnknownEither(NoArguments)

/**
 * `{id: "<non-empty string>"}` and nothing else, recognised by hand with IdOnly's rules. Hot path (bench: the
 * Schema decode was the largest part of an MCP get's own time); anything else goes through decodeIdOnly, which
 * also words the errors. An own `__proto__` key is another key, so it takes the Schema path and is refused.
 */
export const plainId = (args: Readonly<Record<string, unknown>>): string | undefined => {
  for (const key in args) if (key !== "id") return undefined
  const id = args.id
  return typeof id === "string" && id.length > 0 ? id : undefined
}

/**
 * `{id, expectedVersion?}` of a write's arguments, recognised by hand with Target's rules (a non-empty string id; a
 * version that is an integer from 1), or undefined: decodeTarget then decides and words the error. Hot path (bench:
 * MCP set_price: the Schema decode was the tool's largest own cost).
 */
export const plainTarget = (args: Readonly<Record<string, unknown>>): { readonly id: string; readonly expectedVersion: number | undefined } | undefined => {
  const { id, expectedVersion } = args
  if (typeof id !== "string" || id.length === 0) return undefined
  if (expectedVersion === undefined) return Object.hasOwn(args, "expectedVersion") ? undefined : { id, expectedVersion }
  return typeof expectedVersion === "number" && Number.isInteger(expectedVersion) && expectedVersion >= 1 ? { id, expectedVersion } : undefined
}

export const propertiesOf = (schema: JsonSchema) => (schema.properties ?? {}) as Record<string, JsonSchema>
export const requiredOf = (schema: JsonSchema) => (schema.required ?? []) as ReadonlyArray<string>

/** Drops the titles Effect gives refinements by default (`int`, `minLength(1)`): they are not for readers. */
const untitled = (schema: JsonSchema): JsonSchema => {
  const { title: _title, ...rest } = schema
  return rest
}

/**
 * An object's JSON Schema as tools carry it, from its properties (each derived from an Effect Schema, or the
 * catalog's own JSON Schema of a field): `required` only when non-empty; closed for arguments (unknown keys are
 * refused), open for results.
 */
export const objectSchema = (properties: Record<string, unknown>, required: ReadonlyArray<string>, closed = true): JsonSchema => ({
  type: "object",
  properties,
  ...(required.length ? { required } : {}),
  ...(closed ? { additionalProperties: false } : {})
})

/** The properties and required keys of a Struct's derived JSON Schema. */
export const derived = (schema: Schema.Schema.Any) => {
  const json = toJsonSchema(schema)
  return {
    properties: Object.fromEntries(Object.entries(propertiesOf(json)).map(([k, v]) => [k, untitled(v)])),
    required: requiredOf(json)
  }
}

export const TARGET = derived(Target)
export const ID_ONLY = derived(IdOnly)
export const ROW_KEYS = derived(RowKeys)
export const DELETED = derived(Deleted)

/**
 * Properties without their `default`: a field's default applies when a row is created, never to a filter or to a
 * change (a client that fills defaults into a form must not reset a field on update).
 */
export const withoutDefaults = (properties: Record<string, JsonSchema>): Record<string, JsonSchema> =>
  Object.fromEntries(Object.entries(properties).map(([name, { default: _default, ...property }]) => [name, property]))

/**
 * One field's `where` property: a value of the field's own JSON Schema, or operators (ranges on numbers, strings
 * and literals; a set; a null test on a field that can be absent), or null (the field is absent) on such a field.
 */
const whereSchema = (field: FilterableField, own: JsonSchema): JsonSchema => {
  const ranged = field.kind !== "boolean"
  const operators = objectSchema({
    ...(ranged ? { gt: own, gte: own, lt: own, lte: own } : {}),
    in: { type: "array", items: own, minItems: 1, maxItems: MAX_IN_VALUES, description: "any of these values" },
    ...(field.absentable ? { null: { type: "boolean", description: "true: the field is absent or null; false: it has a value" } } : {})
  }, [])
  return {
    anyOf: [own, { ...operators, minProperties: 1 }, ...(field.absentable ? [{ type: "null", description: "the field is absent or null" }] : [])]
  }
}

/**
 * The list tool's `where` and `order` properties, from the catalog: `where` has one property per filterable
 * field (whereSchema); `order` names each filterable field, ascending or with `-`.
 */
/** How a list tool or template says `order` sorts, with one of the type's own fields as the example. */
export const orderSentence = (type: Listable): string => {
  const id = type.keyedBy ?? "id"
  const field = [...orderChoices(type)].find((choice) => choice !== id && !choice.startsWith("-"))
  return field === undefined ? `sort by ${id}` : `sort with order ("${field}", "-${field}"; default ${id})`
}

export const listFilterSchemas = (type: Listable & { readonly fieldsJsonSchema: JsonSchema }): Record<string, JsonSchema> => {
  const properties = withoutDefaults(propertiesOf(type.fieldsJsonSchema))
  return {
    where: {
      ...objectSchema(Object.fromEntries([...type.filterable.values()].map((f) => [f.name, whereSchema(f, properties[f.name] ?? {})])), []),
      description: "only rows that pass every field's filter: a value (equal), null (absent), or operators, " +
        "as {\"gte\": 10, \"lt\": 20}, {\"in\": [\"open\", \"pending\"]}, {\"null\": false}"
    },
    order: { type: "string", enum: [...orderChoices(type)], description: `sort by a field, "-" for descending; default ${type.keyedBy ?? "id"}` }
  }
}

/** An app command's result: the same JSON as `POST /api/_commands/<name>` (command-body.ts). */
export const COMMAND_RESULT: JsonSchema = objectSchema({
  command: { type: "string" },
  correlation: { type: "string", description: "one id for this execution, on each of its events in the log" },
  changes: {
    type: "array",
    description: "one per event the command wrote, in order: the row after it (null for a delete)",
    items: objectSchema({
      type: { type: "string" },
      id: { type: "string" },
      kind: { type: "string", enum: ["created", "updated", "deleted", "invoked"] },
      version: { type: "integer", minimum: 1 },
      row: { anyOf: [{ type: "object" }, { type: "null" }] }
    }, ["type", "id", "kind", "version", "row"], false)
  }
}, ["command", "correlation", "changes"], false)
