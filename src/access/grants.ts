/**
 * Grants, and the one decision every surface asks: may this principal do this operation? Pure: no I/O, no
 * Effect, so each surface (REST, both MCP eras, streams, the console, metrics) calls the same functions, and the
 * unit tests cover the whole grammar.
 *
 * The grammar, derived from the catalog:
 *   admin                       everything: every type, command and view, the console, /metrics, every event
 *   read                        every type's rows, lists, live queries, views and events
 *   metrics                     GET /metrics
 *   <type>:read                 the type's rows, lists and live queries, its schema and its events
 *   <type>:create|update|delete the generic writes
 *   <type>:<method>             one of the type's methods
 *   <type>:*                    all of the above for the type
 *   command:<name>              an app command (its rules still run; the entity types it touches need no grant)
 *   view:<name>                 a view's value
 */
import { Either } from "effect"
import type { CompiledApp } from "../domain/compile.ts"

/** What a request asks to do, as the grants see it. */
export type Operation =
  | { readonly _tag: "Read"; readonly type: string }
  | { readonly _tag: "Write"; readonly type: string; readonly action: string }
  | { readonly _tag: "Command"; readonly name: string }
  | { readonly _tag: "View"; readonly name: string }
  | { readonly _tag: "Metrics" }
  | { readonly _tag: "Admin" }

export const Op = {
  read: (type: string): Operation => ({ _tag: "Read", type }),
  write: (type: string, action: string): Operation => ({ _tag: "Write", type, action }),
  command: (name: string): Operation => ({ _tag: "Command", name }),
  view: (name: string): Operation => ({ _tag: "View", name }),
  metrics: { _tag: "Metrics" } as Operation,
  admin: { _tag: "Admin" } as Operation
} as const

/** A principal's grants, compiled once when the file is read: every check is a Set lookup. */
export interface Grants {
  /** The grants as declared, for messages and for telling two versions of a principal apart. */
  readonly declared: ReadonlyArray<string>
  readonly admin: boolean
  readonly readAll: boolean
  readonly metrics: boolean
  /** `<type>:read` (and `<type>:*`). */
  readonly readTypes: ReadonlySet<string>
  /** `<type>:*`. */
  readonly allOf: ReadonlySet<string>
  /** `<type>:<action>` for create, update, delete and methods. */
  readonly actions: ReadonlySet<string>
  readonly commands: ReadonlySet<string>
  readonly views: ReadonlySet<string>
}

/** The grant an operation needs, as the 403 names it (the narrowest one that allows it). */
export const grantFor = (op: Operation): string => {
  switch (op._tag) {
    case "Read":
      return `${op.type}:read`
    case "Write":
      return `${op.type}:${op.action}`
    case "Command":
      return `command:${op.name}`
    case "View":
      return `view:${op.name}`
    case "Metrics":
      return "metrics"
    case "Admin":
      return "admin"
  }
}

/** Whether `grants` allow `op`. */
export const allows = (grants: Grants, op: Operation): boolean => {
  if (grants.admin) return true
  switch (op._tag) {
    case "Read":
      return grants.readAll || grants.readTypes.has(op.type)
    case "Write":
      return grants.allOf.has(op.type) || grants.actions.has(`${op.type}:${op.action}`)
    case "Command":
      return grants.commands.has(op.name)
    case "View":
      return grants.readAll || grants.views.has(op.name)
    case "Metrics":
      return grants.metrics
    case "Admin":
      return false
  }
}

const GENERIC = new Set(["create", "update", "delete"])

/**
 * The grants declared, checked against the catalog: Left with one message per grant that names nothing the app
 * declares (an unknown type, method, command or view, by name).
 */
export const compileGrants = (app: CompiledApp, declared: ReadonlyArray<string>): Either.Either<Grants, ReadonlyArray<string>> => {
  const problems: Array<string> = []
  let admin = false
  let readAll = false
  let metrics = false
  const readTypes = new Set<string>()
  const allOf = new Set<string>()
  const actions = new Set<string>()
  const commands = new Set<string>()
  const views = new Set<string>()
  for (const grant of declared) {
    if (grant === "admin") admin = true
    else if (grant === "read") readAll = true
    else if (grant === "metrics") metrics = true
    else {
      const colon = grant.indexOf(":")
      if (colon <= 0 || colon === grant.length - 1) {
        problems.push(`grant "${grant}" is not one of admin, read, metrics, <type>:<operation>, command:<name>, view:<name>`)
        continue
      }
      const head = grant.slice(0, colon)
      const tail = grant.slice(colon + 1)
      if (head === "command") {
        if (app.commands.has(tail)) commands.add(tail)
        else problems.push(`grant "${grant}": the app has no command named ${tail}`)
      } else if (head === "view") {
        if (app.views.has(tail)) views.add(tail)
        else problems.push(`grant "${grant}": the app has no view named ${tail}`)
      } else {
        const type = app.types.get(head)
        if (type === undefined) problems.push(`grant "${grant}": the app has no type named ${head}`)
        else if (tail === "*") {
          allOf.add(head)
          readTypes.add(head)
        } else if (tail === "read") readTypes.add(head)
        else if (GENERIC.has(tail) || type.methods.has(tail)) actions.add(grant)
        else problems.push(`grant "${grant}": ${head} has no operation named ${tail} (read, create, update, delete, *, or one of its methods: ${[...type.methods.keys()].join(", ") || "none"})`)
      }
    }
  }
  return problems.length > 0
    ? Either.left(problems)
    : Either.right({ declared: [...declared], admin, readAll, metrics, readTypes, allOf, actions, commands, views })
}

/**
 * Every grant the catalog allows, in the catalog's order: `admin`, `read`, `metrics`; per type `<type>:read`,
 * `:create`, `:update`, `:delete`, one per method, and `<type>:*`; then `command:<name>` and `view:<name>`. What an
 * OAuth server advertises as its scopes (the protected resource metadata's `scopes_supported`).
 */
export const grantsOf = (app: CompiledApp): ReadonlyArray<string> => [
  ...new Set([
    "admin",
    "read",
    "metrics",
    ...[...app.types.values()].flatMap((t) => [`${t.name}:read`, ...[...GENERIC, ...t.methods.keys()].map((op) => `${t.name}:${op}`), `${t.name}:*`]),
    ...[...app.commands.keys()].map((c) => `command:${c}`),
    ...[...app.views.keys()].map((v) => `view:${v}`)
  ])
]
