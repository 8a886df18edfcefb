/**
 * The scopes this server understands: every grant the access grammar allows for the app's catalog. An OAuth
 * token's scopes are grants, so this is the protected resource metadata's `scopes_supported`.
 */
import type { CompiledApp } from "../../domain/compile.ts"

/** The grants every app has, whatever it declares. */
const GLOBAL_GRANTS = ["admin", "read", "metrics"] as const
/** The operations a grant may name on every type, besides the type's methods. */
const TYPE_OPERATIONS = ["read", "create", "update", "delete"] as const

/**
 * Every grant for `catalog`, in the catalog's order: `admin`, `read`, `metrics`; per type `<type>:read`,
 * `<type>:create`, `<type>:update`, `<type>:delete`, `<type>:<method>` for each method and `<type>:*`; then
 * `command:<name>` and `view:<name>`. Retired types are left out: their rows are not served.
 */
export const scopesSupported = (catalog: CompiledApp): ReadonlyArray<string> => {
  const scopes = new Set<string>(GLOBAL_GRANTS)
  for (const [type, compiled] of catalog.types) {
    for (const op of TYPE_OPERATIONS) scopes.add(`${type}:${op}`)
    for (const method of compiled.methods.keys()) scopes.add(`${type}:${method}`)
    scopes.add(`${type}:*`)
  }
  for (const name of catalog.commands.keys()) scopes.add(`command:${name}`)
  for (const name of catalog.views.keys()) scopes.add(`view:${name}`)
  return [...scopes]
}
