/**
 * Turns an app definition into the compiled catalog the runtime uses: validated once at load time, with the
 * decoders and JSON Schemas every surface (REST, MCP tools, resources) shares.
 */
import { Either, ParseResult, Schema, SchemaAST } from "effect"
import { CRUD_OPS, type AppDef, type MethodSpec } from "./catalog.ts"
import { CatalogError, type FieldIssue } from "./errors.ts"
import { toJsonSchema, type JsonSchema } from "./json-schema.ts"

const TYPE_NAME = /^[a-z][a-z0-9_]*$/
const RESERVED_FIELDS = new Set(["id", "version"])
const RESERVED_PARAMS = new Set(["id", "version", "expectedVersion"])
const RESERVED_TYPES = new Set(["schema"])

export interface CompiledMethod {
  readonly name: string
  readonly description?: string
  readonly spec: MethodSpec<any, any>
  readonly decodeParams: (u: unknown) => Either.Either<Record<string, unknown>, ReadonlyArray<FieldIssue>>
  readonly paramsJsonSchema: JsonSchema
}

export interface CompiledType {
  readonly name: string
  readonly description?: string
  readonly fieldNames: ReadonlyArray<string>
  readonly struct: Schema.Struct<Schema.Struct.Fields>
  /** Decodes a create body (unknown keys rejected) into the encoded, storable fields. */
  readonly decodeCreate: (u: unknown) => Either.Either<Record<string, unknown>, ReadonlyArray<FieldIssue>>
  /** Decodes a partial update (unknown keys rejected) into encoded fields. */
  readonly decodePatch: (u: unknown) => Either.Either<Record<string, unknown>, ReadonlyArray<FieldIssue>>
  /** Stored (encoded) fields to the typed values a method sees. */
  readonly decodeStored: (u: unknown) => Record<string, unknown>
  /** A method's typed change back to encoded fields; fails when the method broke the type's rules. */
  readonly encodePatch: (u: unknown) => Either.Either<Record<string, unknown>, ReadonlyArray<FieldIssue>>
  readonly fieldsJsonSchema: JsonSchema
  readonly methods: ReadonlyMap<string, CompiledMethod>
  readonly rest: ReadonlySet<string>
  readonly mcp: ReadonlySet<string>
}

export interface CompiledApp {
  readonly name: string
  readonly description?: string
  readonly types: ReadonlyMap<string, CompiledType>
}

const strict = { errors: "all", onExcessProperty: "error" } as const

/** Entity fields carry no context requirements (they are plain data); this is the erased struct type. */
type DataSchema = Schema.Schema<Record<string, unknown>, Record<string, unknown>, never>
const asData = (s: Schema.Schema.Any) => s as unknown as DataSchema

/** One issue per path: a union's alternatives ("Expected a", "Expected b") become "Expected a | b". */
const issuesOf = (error: ParseResult.ParseError): ReadonlyArray<FieldIssue> => {
  const byPath = new Map<string, { path: Array<string>; messages: Array<string> }>()
  for (const i of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const path = i.path.map(String)
    const key = JSON.stringify(path)
    const entry = byPath.get(key) ?? { path, messages: [] }
    entry.messages.push(i.message)
    byPath.set(key, entry)
  }
  return [...byPath.values()].map(({ path, messages }) => ({ path, message: mergeAlternatives(messages) }))
}

const mergeAlternatives = (messages: ReadonlyArray<string>): string => {
  if (messages.length === 1) return messages[0]
  const parts = messages.map((m) => /^Expected (.+), actual (.+)$/.exec(m))
  const actual = parts[0]?.[2]
  return parts.every((p) => p !== null && p[2] === actual)
    ? `Expected ${parts.map((p) => p![1]).join(" | ")}, actual ${actual}`
    : messages.join("; ")
}

/** True when decoding can change a value's shape (a transformation somewhere), not only check it. */
const transforms = (ast: SchemaAST.AST): boolean => {
  switch (ast._tag) {
    case "Transformation":
    case "Suspend":
    case "Declaration":
      return true
    case "Refinement":
      return transforms(ast.from)
    case "Union":
      return ast.types.some(transforms)
    case "TupleType":
      return ast.elements.some((e) => transforms(e.type)) || ast.rest.some((r) => transforms(r.type))
    case "TypeLiteral":
      return ast.propertySignatures.some((p) => transforms(p.type)) || ast.indexSignatures.some((i) => transforms(i.type))
    default:
      return false
  }
}

/**
 * Decode then encode: the wire carries the encoded form, and that is what the log stores. Without
 * transformations the decoded value already is the encoded one, so the encode is skipped (the hot path).
 */
const storableDecoder = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema, strict)
  if (!transforms(schema.ast)) {
    return (u: unknown) => Either.mapLeft(decode(u), issuesOf) as Either.Either<Record<string, unknown>, ReadonlyArray<FieldIssue>>
  }
  const encode = Schema.encodeEither(schema)
  return (u: unknown): Either.Either<Record<string, unknown>, ReadonlyArray<FieldIssue>> =>
    Either.flatMap(Either.mapLeft(decode(u), issuesOf), (a) =>
      Either.mapLeft(encode(a), issuesOf)) as Either.Either<Record<string, unknown>, ReadonlyArray<FieldIssue>>
}

const typedDecoder = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema, strict)
  return (u: unknown) =>
    Either.mapLeft(decode(u), issuesOf) as Either.Either<Record<string, unknown>, ReadonlyArray<FieldIssue>>
}

const jsonSchemaOrProblem = (schema: Schema.Schema.Any, where: string, problems: Array<string>): JsonSchema => {
  try {
    return toJsonSchema(schema)
  } catch (e) {
    problems.push(`${where} has a type that cannot be mapped to JSON Schema: ${String((e as Error).message).split("\n")[0]}`)
    return {}
  }
}

/** Validates the app and compiles it; fails with every problem found, each naming the type and field. */
export const compileApp = (app: AppDef): Either.Either<CompiledApp, CatalogError> => {
  const problems: Array<string> = []
  if (typeof app?.name !== "string" || app.name.length === 0) problems.push("the app needs a non-empty name")
  const entries = Object.entries(app?.entities ?? {})
  if (entries.length === 0) problems.push("the app declares no entity types")
  const types = new Map<string, CompiledType>()

  for (const [name, def] of entries) {
    if (!TYPE_NAME.test(name)) problems.push(`type "${name}": names must match ${TYPE_NAME} (used in URLs and tool names)`)
    if (RESERVED_TYPES.has(name)) problems.push(`type "${name}": the name is reserved (wo://schema/... URIs)`)
    const fields = def.fields ?? {}
    const fieldNames = Object.keys(fields)
    for (const f of fieldNames) {
      if (RESERVED_FIELDS.has(f)) problems.push(`type "${name}", field "${f}": the name is reserved for the store`)
      if (!Schema.isSchema(fields[f]) && !Schema.isPropertySignature(fields[f]))
        problems.push(`type "${name}", field "${f}": not an Effect Schema`)
      else jsonSchemaOrProblem(Schema.Struct({ [f]: fields[f] }), `type "${name}", field "${f}"`, problems)
    }
    const methods = new Map<string, CompiledMethod>()
    for (const [mname, spec] of Object.entries(def.methods ?? {})) {
      if ((CRUD_OPS as ReadonlyArray<string>).includes(mname))
        problems.push(`type "${name}", method "${mname}": clashes with the CRUD operation of that name`)
      if (!TYPE_NAME.test(mname)) problems.push(`type "${name}", method "${mname}": names must match ${TYPE_NAME}`)
      if (typeof spec?.apply !== "function") problems.push(`type "${name}", method "${mname}": needs an apply function`)
      const params = spec?.params ?? {}
      for (const p of Object.keys(params)) {
        if (RESERVED_PARAMS.has(p)) problems.push(`type "${name}", method "${mname}", param "${p}": the name is reserved`)
      }
      const paramsStruct = Schema.Struct(params)
      methods.set(mname, {
        name: mname,
        description: spec?.description,
        spec,
        decodeParams: typedDecoder(asData(paramsStruct)),
        paramsJsonSchema: jsonSchemaOrProblem(paramsStruct, `type "${name}", method "${mname}" params`, problems)
      })
    }
    const known = new Set<string>([...CRUD_OPS, ...methods.keys()])
    const exposure = (list: ReadonlyArray<string> | undefined, which: string) => {
      if (list === undefined) return undefined
      for (const op of list)
        if (!known.has(op)) problems.push(`type "${name}", ${which} expose list: unknown operation "${op}"`)
      return new Set(list)
    }
    const rest = exposure(def.rest, "rest") ?? known
    const mcp = exposure(def.mcp, "mcp") ?? rest
    const struct = Schema.Struct(fields)
    const data = asData(struct)
    const partial = asData(Schema.partial(struct))
    const decodeStored = Schema.decodeUnknownSync(data)
    types.set(name, {
      name,
      description: def.description,
      fieldNames,
      struct,
      decodeCreate: storableDecoder(data),
      decodePatch: storableDecoder(partial),
      decodeStored,
      encodePatch: ((encode) => (u: unknown) =>
        Either.mapLeft(encode(u), issuesOf) as Either.Either<Record<string, unknown>, ReadonlyArray<FieldIssue>>)(
        Schema.encodeUnknownEither(partial, strict)),
      fieldsJsonSchema: problems.length ? {} : toJsonSchema(struct),
      methods,
      rest,
      mcp
    })
  }
  return problems.length > 0
    ? Either.left(new CatalogError({ problems }))
    : Either.right({ name: app.name, description: app.description, types })
}
