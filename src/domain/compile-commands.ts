/**
 * App commands (commands across entity types, see `CommandSpec` in catalog.ts) compiled from the app definition:
 * checked once at load time, every problem named, with the params decoder and JSON Schema REST and MCP share.
 */
import { Either, Schema } from "effect"
import type { AppDef, CommandDef } from "./catalog.ts"
import { asData, opaqueFieldsCopier, typedDecoder, type InputDecoder } from "./codecs.ts"
import type { FieldIssue } from "./errors.ts"
import { toJsonSchema, type JsonSchema } from "./json-schema.ts"
import { refFields } from "./rules/rules.ts"
import { describeThrown } from "./decide/user-code.ts"

const COMMAND_NAME = /^[a-z][a-z0-9_]*$/
const RESERVED_PARAMS = new Set(["id", "version", "expectedVersion", "__proto__", "constructor"])

export interface CompiledCommand {
  readonly name: string
  readonly description?: string
  /** User code: run it isolated (command-decider.ts). */
  readonly decide: CommandDef["decide"]
  /** The params as a client sends them, decoded to the values `decide` sees; unknown keys refused. */
  readonly decodeParams: InputDecoder
  /**
   * A copy of decoded params for `decide`, for params whose decode passes objects through (`Unknown`, ...): a command
   * decided again (a shared log) must see the params the client sent. Undefined when the decode copies everything.
   */
  readonly copyParams?: (params: Record<string, unknown>) => Record<string, unknown>
  readonly paramsJsonSchema: JsonSchema
  /** Params that reference rows: param -> referenced type. */
  readonly refs: ReadonlyMap<string, string>
  /** Served as `POST /api/_commands/<name>`. */
  readonly rest: boolean
  /** Served as the MCP tool `<name>`. */
  readonly mcp: boolean
}

/**
 * Validates and compiles `app.commands`, pushing one problem per mistake, each naming the command. `toolNames`:
 * the tools types and views generate (`books_create`, `view_x`), which a command's tool must not shadow.
 */
export const compileCommands = (
  app: AppDef,
  typeNames: ReadonlySet<string>,
  toolNames: ReadonlySet<string>,
  problems: Array<string>
): ReadonlyMap<string, CompiledCommand> => {
  const commands = new Map<string, CompiledCommand>()
  const declared: unknown = app.commands ?? {}
  if (typeof declared !== "object" || declared === null || Array.isArray(declared)) {
    problems.push("commands must be an object of command declarations: commands: { <name>: { params, decide } }")
    return commands
  }
  const viewTools = new Set(Object.keys(app.views ?? {}).map((v) => `view_${v}`))
  for (const [name, def] of Object.entries(declared as Record<string, CommandDef>)) {
    const where = `command "${name}"`
    const before = problems.length
    if (!COMMAND_NAME.test(name)) problems.push(`${where}: names must match ${COMMAND_NAME} (used in URLs and tool names)`)
    if (toolNames.has(name) || viewTools.has(name)) problems.push(`${where}: clashes with the MCP tool of the same name`)
    if (typeNames.has(name)) problems.push(`${where}: clashes with the type of the same name`)
    if (typeof def !== "object" || def === null) {
      problems.push(`${where}: not a command declaration; use { params, decide(ctx, params) }`)
      continue
    }
    if (typeof def.decide !== "function") problems.push(`${where}: needs a decide function (ctx, params) => changes`)
    for (const flag of ["rest", "mcp"] as const) {
      if (def[flag] !== undefined && typeof def[flag] !== "boolean") problems.push(`${where}: ${flag} must be true or false`)
    }
    const params: unknown = def.params ?? {}
    if (typeof params !== "object" || params === null || Array.isArray(params)) {
      problems.push(`${where}: params must be an object of Effect Schemas`)
      continue
    }
    for (const [p, schema] of Object.entries(params)) {
      if (RESERVED_PARAMS.has(p)) problems.push(`${where}, param "${p}": the name is reserved`)
      if (!Schema.isSchema(schema) && !Schema.isPropertySignature(schema)) problems.push(`${where}, param "${p}": not an Effect Schema`)
    }
    if (problems.length > before) continue
    const struct = Schema.Struct(params as Schema.Struct.Fields)
    let paramsJsonSchema: JsonSchema = {}
    try {
      paramsJsonSchema = toJsonSchema(struct)
    } catch (e) {
      problems.push(`${where}: params have a type that cannot be mapped to JSON Schema: ${describeThrown(e).split("\n")[0]}`)
      continue
    }
    const rest = def.rest ?? true
    const copyParams = opaqueFieldsCopier(params as Schema.Struct.Fields)
    commands.set(name, {
      name,
      ...(def.description === undefined ? {} : { description: def.description }),
      decide: def.decide,
      decodeParams: typedDecoder(asData(struct)),
      ...(copyParams === undefined ? {} : { copyParams }),
      paramsJsonSchema,
      refs: refFields(params as Schema.Struct.Fields),
      rest,
      mcp: def.mcp ?? rest
    })
  }
  return commands
}
