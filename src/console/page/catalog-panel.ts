/** The catalog card: each type's fields, and which operations REST and MCP expose, with the tool names. */
import type { CatalogView, OperationView, TypeView } from "../wire.ts"
import { fill, h } from "./dom.ts"

const operationRow = (op: OperationView) =>
  h("tr", { class: op.rest === undefined && op.tool === undefined ? "off" : undefined },
    h("td", {}, h("code", {}, op.name), op.kind === "method" ? h("span", { class: "tag" }, "method") : null),
    h("td", {}, op.rest === undefined ? h("span", { class: "none" }, "—") : h("code", {}, op.rest)),
    h("td", {}, op.tool === undefined ? h("span", { class: "none" }, "—") : h("code", { class: "tool" }, op.tool)))

const typeBlock = (type: TypeView) =>
  h("div", { class: "type" },
    h("div", { class: "type-head" },
      h("span", { class: "type-name" }, type.name),
      type.description ? h("span", { class: "muted" }, type.description) : null,
      type.resource ? h("code", { class: "uri", title: "MCP resource template" }, type.resource) : null),
    h("div", { class: "fields" },
      type.fields.map((f) =>
        h("span", { class: "field", title: f.required ? "required" : "optional" },
          h("code", { class: "field-name" }, f.required ? f.name : `${f.name}?`),
          h("span", { class: "field-type" }, f.summary)))),
    h("table", { class: "ops" },
      h("thead", {}, h("tr", {}, h("th", {}, "operation"), h("th", {}, "REST"), h("th", {}, "MCP tool"))),
      h("tbody", {}, type.operations.map(operationRow))))

export const renderCatalog = (catalog: CatalogView) => fill("catalog", catalog.types.map(typeBlock))
