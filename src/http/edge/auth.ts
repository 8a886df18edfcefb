/**
 * Bearer-token authentication for /mcp and /api (`WO_AUTH_TOKEN`). Tokens are compared in constant time
 * (over their SHA-256 digests, so the lengths never leak either). MCP's OAuth-based authorization is not
 * implemented; a static token is the interim (see "Security" in docs/operating.md).
 */
import { createHash, timingSafeEqual } from "node:crypto"

const digest = (s: string) => createHash("sha256").update(s).digest()

export const WWW_AUTHENTICATE = 'Bearer realm="writeonce"'

/** A predicate over the Authorization header; always true when no token is configured. */
export const makeAuthCheck = (token: string | undefined) => {
  if (token === undefined) return (_authorization: string | undefined) => true
  const expected = digest(token)
  return (authorization: string | undefined) => {
    const m = authorization === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(authorization)
    return m !== null && timingSafeEqual(digest(m[1]), expected)
  }
}

const LOOPBACK = /^(127(\.\d{1,3}){3}|localhost|::1|\[::1\])$/i

/** True when binding to `host` only accepts connections from this machine. */
export const isLoopback = (host: string) => LOOPBACK.test(host)
