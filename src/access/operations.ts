/**
 * What a request or a resource URI asks to do, as an Operation (grants.ts), read from its shape alone: never from
 * the data, so a refusal tells nothing about what exists. A type the principal may not touch answers 403 whether
 * or not it exists.
 */
import { parseUri } from "../domain/uri.ts"
import { Op, type Operation } from "./grants.ts"

/** What any authenticated principal may ask (the route then narrows: MCP per method, the event tail per type). */
export const ANY = "any" as const

const API = "/api/"
const COMMANDS = "/api/_commands/"
const VIEWS = "/api/_views"
/** `/api/_*` routes open to every principal: each filters what it answers by the principal's grants (the OpenAPI document lists the routes the caller may use). */
const FILTERED = new Set(["/api/_events", VIEWS, "/api/_openapi.json"])

const segment = (s: string) => {
  if (!s.includes("%")) return s
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

/**
 * The operation a request on a protected path (`/mcp`, `/api/*`, `/metrics`) asks for, `ANY`, or `undefined` for
 * a path that needs no credential. Method and path only: `/api/<type>` GET reads, POST creates; `/api/<type>/<id>`
 * PATCH updates, DELETE deletes, anything else reads; `/api/<type>/<id>/<m>` POST invokes `m`, anything else reads.
 */
export const requestOperation = (method: string, path: string, metricsPath: string): Operation | typeof ANY | undefined => {
  if (path === "/mcp") return ANY
  if (path === metricsPath) return Op.metrics
  if (!path.startsWith(API)) return undefined
  if (path.startsWith(COMMANDS)) return Op.command(segment(path.slice(COMMANDS.length)))
  if (path.startsWith(`${VIEWS}/`)) {
    // `/api/_views/<name>/<key>`: one entry of a keyed view is read under the view's own grant.
    const name = path.slice(VIEWS.length + 1)
    const slash = name.indexOf("/")
    return Op.view(segment(slash === -1 ? name : name.slice(0, slash)))
  }
  if (FILTERED.has(path)) return ANY
  // The console's other read-only views (catalog, rows, agents) show everything: admin's.
  if (path.charCodeAt(API.length) === 95 /* _ */) return Op.admin
  const first = path.indexOf("/", API.length)
  const type = segment(first === -1 ? path.slice(API.length) : path.slice(API.length, first))
  if (first === -1) return method === "POST" ? Op.write(type, "create") : Op.read(type)
  const second = path.indexOf("/", first + 1)
  if (second === -1) return method === "PATCH" ? Op.write(type, "update") : method === "DELETE" ? Op.write(type, "delete") : Op.read(type)
  const rest = path.slice(second + 1)
  return method === "POST" && !rest.includes("/") ? Op.write(type, segment(rest)) : Op.read(type)
}

/**
 * The operation reading a resource asks for: a row, a list (a live query) or anything else of a type, its
 * `:read`; a view or one entry of it, `view:<name>`; a type's schema, `:read` too (the tools a principal sees carry their schemas
 * without it); the app commands' description, undefined (each principal reads its own part of it). `undefined`
 * too for a URI that is no resource (it is then not found).
 */
export const uriOperation = (uri: string): Operation | undefined => {
  const parsed = parseUri(uri)
  if (parsed === undefined) return undefined
  switch (parsed._tag) {
    case "View":
    case "ViewEntry":
      return Op.view(parsed.name)
    case "Schema":
      return parsed.type === "_commands" ? undefined : Op.read(parsed.type)
    default:
      return "type" in parsed ? Op.read((parsed as { readonly type: string }).type) : undefined
  }
}
