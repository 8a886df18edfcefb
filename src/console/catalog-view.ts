/**
 * The catalog as the console shows it: each type's fields, and each operation's REST route and MCP tool; the
 * views; the app's commands across types with their params, route and tool.
 */
import { CRUD_OPS } from "../domain/catalog.ts"
import type { CompiledApp, CompiledType } from "../domain/compile.ts"
import { COMPUTED_DEFAULT, type JsonSchema } from "../domain/json-schema.ts"
import { rowUriTemplate, viewEntryUriTemplate, viewUri } from "../domain/uri.ts"
import type { CatalogView, CommandView, FieldView, OperationView, TypeView } from "./wire.ts"

/** The REST route of each operation, as rest.ts serves it. */
const restRoute = (type: string, op: string): string => {
  switch (op) {
    case "list":
      return `GET /api/${type}`
    case "create":
      return `POST /api/${type}`
    case "get":
      return `GET /api/${type}/:id`
    case "update":
      return `PATCH /api/${type}/:id`
    case "delete":
      return `DELETE /api/${type}/:id`
    default:
      return `POST /api/${type}/:id/${op}`
  }
}

/**
 * A one-line reading of a JSON Schema, for people: `"USD" | "EUR"`, `number > 0`, `string[]`, `{ name, email? }`,
 * `integer ≥ 0, default 0`.
 */
export const summarize = (schema: JsonSchema): string =>
  "default" in schema
    ? `${summarizeType(schema)}, default ${JSON.stringify(schema.default)}`
    : typeof schema.description === "string" && schema.description.endsWith(COMPUTED_DEFAULT)
    ? `${summarizeType(schema)}, default computed at each create`
    : summarizeType(schema)

const summarizeType = (schema: JsonSchema): string => {
  if (Array.isArray(schema.allOf)) {
    const { allOf, ...rest } = schema
    return summarizeType((allOf as Array<JsonSchema>).reduce((merged, part) => ({ ...merged, ...part }), rest))
  }
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(" | ")
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Array<JsonSchema>).map(summarize).join(" | ")
  const constraints: Array<string> = []
  if (typeof schema.minLength === "number") constraints.push(`min ${schema.minLength}`)
  if (typeof schema.maxLength === "number") constraints.push(`max ${schema.maxLength}`)
  if (typeof schema.exclusiveMinimum === "number") constraints.push(`> ${schema.exclusiveMinimum}`)
  if (typeof schema.minimum === "number") constraints.push(`≥ ${schema.minimum}`)
  if (typeof schema.exclusiveMaximum === "number") constraints.push(`< ${schema.exclusiveMaximum}`)
  if (typeof schema.maximum === "number") constraints.push(`≤ ${schema.maximum}`)
  const base = (() => {
    switch (schema.type) {
      case "array":
        return `${summarize((schema.items ?? {}) as JsonSchema)}[]`
      case "object": {
        const required = new Set((schema.required ?? []) as Array<string>)
        const names = Object.keys((schema.properties ?? {}) as object)
        return `{ ${names.map((n) => (required.has(n) ? n : `${n}?`)).join(", ")} }`
      }
      default:
        return typeof schema.type === "string" ? schema.type : "any"
    }
  })()
  // "number > 0" reads as one expression; length bounds read better after a comma.
  const numeric = schema.type === "number" || schema.type === "integer"
  return constraints.length === 0 ? base : numeric ? `${base} ${constraints.join(", ")}` : `${base}, ${constraints.join(", ")}`
}

/** The properties of an object's JSON Schema, read for people (`names`: in this order; default: the schema's). */
const fieldsOf = (schema: JsonSchema, names?: ReadonlyArray<string>): ReadonlyArray<FieldView> => {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>
  const required = new Set((schema.required ?? []) as Array<string>)
  return (names ?? Object.keys(properties)).map((name) => ({ name, required: required.has(name), summary: summarize(properties[name] ?? {}) }))
}

/**
 * `toolNames(type)` lists the type's generated MCP tools, named `<type>_<operation>` (see http/mcp/tools.ts); taking
 * them from the tool builder keeps the console showing exactly what tools/list answers.
 */
export const catalogView = (
  catalog: CompiledApp,
  version: string,
  toolNames: (type: CompiledType) => ReadonlyArray<string>
): CatalogView => ({
  app: { name: catalog.name, ...(catalog.description ? { description: catalog.description } : {}) },
  version,
  types: [...catalog.types.values()].map((type): TypeView => {
    const tools = new Set(toolNames(type))
    const operation = (name: string, kind: OperationView["kind"], description?: string): OperationView => {
      const tool = `${type.name}_${name}`
      return {
        name,
        kind,
        ...(description ? { description } : {}),
        ...(type.rest.has(name) ? { rest: restRoute(type.name, name) } : {}),
        ...(tools.has(tool) ? { tool } : {})
      }
    }
    return {
      name: type.name,
      ...(type.description ? { description: type.description } : {}),
      fields: fieldsOf(type.fieldsJsonSchema, type.fieldNames),
      operations: [
        ...CRUD_OPS.map((op) => operation(op, "crud")),
        ...[...type.methods.values()].map((m) => operation(m.name, "method", m.description))
      ],
      ...(type.mcp.size > 0 ? { resource: rowUriTemplate(type.name) } : {})
    }
  }),
  views: [...catalog.views.values()].map((view) => ({
    name: view.name,
    ...(view.description ? { description: view.description } : {}),
    on: view.on,
    ...(view.keyed
      ? { rest: `GET /api/_views/${view.name}/<key>`, resource: viewEntryUriTemplate(view.name), tool: `view_${view.name}, view_${view.name}_list`, keyed: true as const }
      : { rest: `GET /api/_views/${view.name}`, resource: viewUri(view.name), tool: `view_${view.name}` })
  })),
  commands: [...catalog.commands.values()].map((command): CommandView => ({
    name: command.name,
    ...(command.description ? { description: command.description } : {}),
    params: fieldsOf(command.paramsJsonSchema),
    ...(command.rest ? { rest: `POST /api/_commands/${command.name}` } : {}),
    // An app command's MCP tool is named as the command (see http/mcp/tools.ts).
    ...(command.mcp ? { tool: command.name } : {})
  }))
})
