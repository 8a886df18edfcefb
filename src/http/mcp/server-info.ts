/**
 * What the server says about itself, built once for both eras: serverInfo, each era's capabilities and the
 * one-paragraph instructions.
 */
import type { CompiledApp } from "../../domain/compile.ts"
import { rowUriTemplate, schemaUri } from "../../domain/uri.ts"
import { VERSION } from "../../support/version.ts"

export const serverInfo = (catalog: CompiledApp) => ({ name: catalog.name, version: VERSION })

/** Describes the app's types and tools for an agent, in one paragraph. */
export const instructions = (catalog: CompiledApp, toolNames: ReadonlyArray<string>): string => {
  const types = [...catalog.types.values()].filter((t) => t.mcp.size > 0)
  const described = types.map((t) => {
    const tools = toolNames.filter((n) => n.startsWith(`${t.name}_`))
    return `${t.name} (fields: ${t.fieldNames.join(", ")}; tools: ${tools.join(", ")})`
  })
  return [
    `This is the "${catalog.name}" app${catalog.description ? `: ${catalog.description.replace(/\.$/, "")}` : ""}.`,
    `Its types are ${described.join("; ")}.`,
    ...commandsSentence(catalog),
    `Every row is {id, version, ...fields}; read one as the resource ${types[0] ? rowUriTemplate(types[0].name) : "wo://<type>/{id}"} and a type's schema as ${types[0] ? schemaUri(types[0].name) : "wo://schema/<type>"}.`,
    `Writes are answered only once durable; pass expectedVersion to an update or method to refuse it if the row changed since you read it.`
  ].join(" ")
}

/** The app commands served as tools, if any: each changes rows of several types at once, atomically. */
const commandsSentence = (catalog: CompiledApp): ReadonlyArray<string> => {
  const served = [...catalog.commands.values()].filter((c) => c.mcp)
  return served.length === 0
    ? []
    : [`Its commands, each changing rows of several types atomically (all or nothing), are the tools ${served.map((c) => c.name).join(", ")}.`]
}

export interface ServerDescription {
  readonly info: { readonly name: string; readonly version: string }
  readonly instructions: string
  /** Declared honestly (only what the server does); a legacy session subscribes row by row. */
  readonly legacyCapabilities: object
  /** Rows can be watched one by one and as lists; the tool list changes only under wo dev. */
  readonly modernCapabilities: object
}

/** With `catalogReloads` (wo dev), the tool and resource lists change on a reload, and the streams say so. */
export const describeServer = (catalog: CompiledApp, toolNames: ReadonlyArray<string>, catalogReloads = false): ServerDescription => ({
  info: serverInfo(catalog),
  instructions: instructions(catalog, toolNames),
  legacyCapabilities: catalogReloads
    ? { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true } }
    : { tools: {}, resources: { subscribe: true } },
  modernCapabilities: { tools: catalogReloads ? { listChanged: true } : {}, resources: { subscribe: true, listChanged: true } }
})
