/**
 * The catalog card: each type's fields, and which operations REST and MCP expose, with the tool names; then the
 * app's commands across types, with their params, route and tool.
 */
import type { CatalogView, CommandView, FieldView, OperationView, TypeView } from "../wire.ts"
import { fill, h } from "./dom.ts"

const operationRow = (op: OperationView) =>
  h("tr", { class: op.rest === undefined && op.tool === undefined ? "off" : undefined },
    h("td", {}, h("code", {}, op.name), op.kind === "method" ? h("span", { class: "tag" }, "method") : null),
    h("td", {}, op.rest === undefined ? h("span", { class: "none" }, "—") : h("code", {}, op.rest)),
    h("td", {}, op.tool === undefined ? h("span", { class: "none" }, "—") : h("code", { class: "tool" }, op.tool)))

const fieldChips = (fields: ReadonlyArray<FieldView>) =>
  h("div", { class: "fields" },
    fields.map((f) =>
      h("span", { class: "field", title: f.required ? "required" : "optional" },
        h("code", { class: "field-name" }, f.required ? f.name : `${f.name}?`),
        h("span", { class: "field-type" }, f.summary))))

const typeBlock = (type: TypeView) =>
  h("div", { class: "type" },
    h("div", { class: "type-head" },
      h("span", { class: "type-name" }, type.name),
      type.description ? h("span", { class: "muted" }, type.description) : null,
      type.resource ? h("code", { class: "uri", title: "MCP resource template" }, type.resource) : null),
    fieldChips(type.fields),
    h("table", { class: "ops" },
      h("thead", {}, h("tr", {}, h("th", {}, "operation"), h("th", {}, "REST"), h("th", {}, "MCP tool"))),
      h("tbody", {}, type.operations.map(operationRow))))

const commandRow = (command: CommandView) =>
  h("tr", { class: command.rest === undefined && command.tool === undefined ? "off" : undefined, "data-command": command.name },
    h("td", {}, h("code", {}, command.name), command.description ? h("div", { class: "muted" }, command.description) : null),
    h("td", {}, command.params.length === 0 ? h("span", { class: "none" }, "—") : fieldChips(command.params)),
    h("td", {}, command.rest === undefined ? h("span", { class: "none" }, "—") : h("code", {}, command.rest)),
    h("td", {}, command.tool === undefined ? h("span", { class: "none" }, "—") : h("code", { class: "tool" }, command.tool)))

/** Commands change rows of several types in one atomic write: listed once, beside the types. */
const commandsBlock = (commands: ReadonlyArray<CommandView>) =>
  h("div", { class: "type commands" },
    h("div", { class: "type-head" },
      h("span", { class: "type-name" }, "commands"),
      h("span", { class: "muted" }, "across types, each one atomic")),
    h("table", { class: "ops" },
      h("thead", {}, h("tr", {}, h("th", {}, "command"), h("th", {}, "params"), h("th", {}, "REST"), h("th", {}, "MCP tool"))),
      h("tbody", {}, commands.map(commandRow))))

export const renderCatalog = (catalog: CatalogView) =>
  fill("catalog", [...catalog.types.map(typeBlock), ...(catalog.commands.length > 0 ? [commandsBlock(catalog.commands)] : [])])
