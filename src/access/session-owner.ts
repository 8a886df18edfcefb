/**
 * A legacy MCP session belongs to the principal that opened it: its id ends with a digest of the principal's
 * scope and the id's random part, so every node (sessions are shared on PostgreSQL) can tell, from the id alone,
 * whether the principal presenting it opened it. Another principal that learns the id cannot use it: the digest
 * it would need is of its own scope, which makes another id. No secret is needed for that, and the session store
 * keeps its format. Sessions opened without a scope (no credential required, `WO_AUTH_TOKEN`, or before
 * principals existed) have no digest, and only such callers may use them.
 */
import { hash } from "node:crypto"

/** The id of a session whose random part is `random`, opened by a principal with `scope` (Principal.keyScope). */
export const ownedSessionId = (random: string, scope: string | undefined) =>
  scope === undefined ? random : `${random}.${hash("sha256", `${scope}\n${random}`, "base64url").slice(0, 22)}`

/** Whether the session `id` was opened by a principal with `scope`. */
export const sessionOwnedBy = (id: string, scope: string | undefined): boolean => {
  const dot = id.indexOf(".")
  if (scope === undefined) return dot === -1
  return dot > 0 && id === ownedSessionId(id.slice(0, dot), scope)
}
