/**
 * Turns an app definition into the compiled catalog the runtime uses: validated once at load time, with the
 * decoders and JSON Schemas every surface (REST, MCP tools, resources) shares.
 */
import { Either, Schema } from "effect"
import { CRUD_OPS, type AppDef, type MethodSpec } from "./catalog.ts"
import { asData, opaqueFieldsCopier, patchCodecs, rowNormaliser, storableDecoder, storedDecoder, typedDecoder, type InputDecoder } from "./codecs.ts"
import { CatalogError, type FieldIssue } from "./errors.ts"
import { filterableFields, type FilterableField } from "./filterable.ts"
import { compileIndexes } from "./indexes.ts"
import { compileViews, typeToolNames, type CompiledView } from "./compile-views.ts"
import { compileCommands, type CompiledCommand } from "./compile-commands.ts"
import { toJsonSchema, type JsonSchema } from "./json-schema.ts"
import { compileMigrations, type Upcast } from "./migrations.ts"
import { compileRules, type TypeRules } from "./rules/rules.ts"
import { describeThrown } from "./decide/user-code.ts"

const TYPE_NAME = /^[a-z][a-z0-9_]*$/
// `__proto__` and `constructor` are refused in every input (input-rules.ts), so a field by that name could never be written.
const RESERVED_FIELDS = new Set(["id", "version", "__proto__", "constructor"])
const RESERVED_PARAMS = new Set(["id", "version", "expectedVersion", "__proto__", "constructor"])
const RESERVED_TYPES = new Set(["schema", "views"])

export interface CompiledMethod {
  readonly name: string
  readonly description?: string
  readonly spec: MethodSpec<any, any>
  readonly decodeParams: InputDecoder
  /**
   * A copy of decoded params for `apply`, for params whose decode passes objects through (`Unknown`, ...): the event
   * stores the params, so `apply` must not change them. Undefined when the decode already copies everything.
   */
  readonly copyParams?: (params: Record<string, unknown>) => Record<string, unknown>
  readonly paramsJsonSchema: JsonSchema
  /** The fields its change may set (`changes`), when it declares them. */
  readonly changes?: ReadonlySet<string>
}

export interface CompiledType {
  readonly name: string
  readonly description?: string
  readonly fieldNames: ReadonlyArray<string>
  readonly struct: Schema.Struct<Schema.Struct.Fields>
  /** Decodes a create body (unknown keys rejected) into the encoded, storable fields. */
  readonly decodeCreate: InputDecoder
  /** Decodes a partial update (unknown keys rejected) into encoded fields. */
  readonly decodePatch: InputDecoder
  /** Stored (encoded) fields to the typed values user code sees: a copy of its own, nothing shared with the row. */
  readonly decodeStored: (u: unknown) => Record<string, unknown>
  /** A method's typed change back to encoded fields; fails when the method broke the type's rules. */
  readonly encodePatch: (u: unknown) => Either.Either<Record<string, unknown>, ReadonlyArray<FieldIssue>>
  /** Stored fields in the current schema's form (defaults applied); Left: why they do not fit it. */
  readonly normalise: (fields: Record<string, unknown>) => Either.Either<Record<string, unknown>, ReadonlyArray<FieldIssue>>
  /** The schema version events and rows are written with (1 unless declared). */
  readonly version: number
  /** Brings fields written at an older version to `version` through the declared migrations; throws MigrationFailed. */
  readonly upcast: Upcast
  /** Why the present, declared fields do not fit the current schema (fields it no longer declares are ignored). */
  readonly presentFieldIssues: (fields: Record<string, unknown>) => ReadonlyArray<FieldIssue>
  readonly fieldsJsonSchema: JsonSchema
  /** The scalar and literal fields lists can be filtered and ordered by (see filterable.ts). */
  readonly filterable: ReadonlyMap<string, FilterableField>
  /** The indexes the type declares, as field lists (indexes.ts). */
  readonly indexes: ReadonlyArray<ReadonlyArray<string>>
  readonly methods: ReadonlyMap<string, CompiledMethod>
  readonly rest: ReadonlySet<string>
  readonly mcp: ReadonlySet<string>
  /** Invariants, guarded fields and references (rules.ts). */
  readonly rules: TypeRules
}

export interface CompiledApp {
  readonly name: string
  readonly description?: string
  readonly types: ReadonlyMap<string, CompiledType>
  /** Types whose history stays in the log but whose rows are no longer served. */
  readonly retired: ReadonlySet<string>
  /** Declared projections, by name (see compile-views.ts). */
  readonly views: ReadonlyMap<string, CompiledView>
  /** Commands across entity types, by name (see compile-commands.ts). */
  readonly commands: ReadonlyMap<string, CompiledCommand>
}

const jsonSchemaOrProblem = (schema: Schema.Schema.Any, where: string, problems: Array<string>): JsonSchema => {
  try {
    return toJsonSchema(schema)
  } catch (e) {
    problems.push(`${where} has a type that cannot be mapped to JSON Schema: ${describeThrown(e).split("\n")[0]}`)
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
    if (RESERVED_TYPES.has(name)) problems.push(`type "${name}": the name is reserved (wo://schema/... and wo://views/... URIs)`)
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
      const changes: unknown = spec?.changes
      if (changes !== undefined && (!Array.isArray(changes) || changes.some((f) => typeof f !== "string" || !fieldNames.includes(f))))
        problems.push(`type "${name}", method "${mname}": changes must list fields of the type`)
      const paramsStruct = Schema.Struct(params)
      const copyParams = opaqueFieldsCopier(params)
      methods.set(mname, {
        name: mname,
        description: spec?.description,
        spec,
        decodeParams: typedDecoder(asData(paramsStruct)),
        ...(copyParams === undefined ? {} : { copyParams }),
        ...(Array.isArray(changes) ? { changes: new Set(changes as ReadonlyArray<string>) } : {}),
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
    const { version, upcast } = compileMigrations(name, def, problems)
    const rules = compileRules(name, def, app.entities, problems)
    if (problems.length > 0) continue // the schemas below may not even be schemas
    const struct = Schema.Struct(fields)
    const data = asData(struct)
    const filterable = filterableFields(fields)
    const { decodePatch, encodePatch } = patchCodecs(fields)
    const declared = new Set(fieldNames)
    const presentFieldIssues = (u: Record<string, unknown>) => {
      const present: Record<string, unknown> = {}
      for (const key of Object.keys(u)) if (declared.has(key)) present[key] = u[key]
      return Either.match(decodePatch(present), { onLeft: (issues) => issues, onRight: () => [] })
    }
    types.set(name, {
      name,
      description: def.description,
      fieldNames,
      struct,
      decodeCreate: storableDecoder(data),
      decodePatch,
      decodeStored: storedDecoder(data, fields),
      encodePatch,
      normalise: rowNormaliser(data),
      version,
      upcast,
      presentFieldIssues,
      fieldsJsonSchema: jsonSchemaOrProblem(struct, `type "${name}"`, problems),
      filterable,
      indexes: compileIndexes(name, def.indexes, filterable, problems),
      methods,
      rest,
      mcp,
      rules
    })
  }
  const retired = new Set<string>()
  const declaredRetired: unknown = app?.retired ?? []
  if (!Array.isArray(declaredRetired)) problems.push(`retired must be a list of type names, e.g. retired: ["old_type"]`)
  else {
    for (const name of declaredRetired) {
      if (typeof name !== "string" || !TYPE_NAME.test(name)) problems.push(`retired type ${JSON.stringify(name)}: not a type name (${TYPE_NAME})`)
      else if (entries.some(([declared]) => declared === name)) problems.push(`retired type "${name}": the app still declares it; remove it from entities or from retired`)
      else retired.add(name)
    }
  }
  const typeMethods = new Map(entries.map(([name, def]) => [name, new Set(Object.keys(def?.methods ?? {}))] as const))
  const views = compileViews(app, typeMethods, typeToolNames(typeMethods), problems)
  const commands = compileCommands(app, new Set(typeMethods.keys()), typeToolNames(typeMethods), problems)
  return problems.length > 0
    ? Either.left(new CatalogError({ problems }))
    : Either.right({ name: app.name, description: app.description, types, retired, views, commands })
}
