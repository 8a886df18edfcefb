/**
 * The library sample served in-process with an access file (src/access/): the file in a temp dir, a token per
 * principal, and requests that carry one. What access-matrix and access-revocation tests share.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import library from "../examples/library/app.ts"
import { Access } from "../src/access/access.ts"
import { LEGACY_VERSION, MCP_HEADERS, initializeBody, initializedBody, modernRequest } from "./mcp.ts"
import { http, rawRequest, startServer, tempDir } from "./server.ts"

export interface DeclaredPrincipal {
  readonly name: string
  readonly grants: ReadonlyArray<string>
}

/** The token the test gives a principal: its name, padded past the file's minimum length. */
export const tokenOf = (name: string) => `${name}-test-token-0123456789`

export const accessFileText = (principals: ReadonlyArray<DeclaredPrincipal>) =>
  JSON.stringify({ principals: principals.map((p) => ({ name: p.name, token: tokenOf(p.name), grants: p.grants })) }, null, 2)

/** The library served with an access file of `principals`; `write` replaces the file (the server re-reads it). */
export const startWithAccess = async (principals: ReadonlyArray<DeclaredPrincipal>) => {
  const dir = tempDir("wo-access-")
  const file = path.join(dir, "access.json")
  fs.writeFileSync(file, accessFileText(principals))
  const server = await startServer(library, { accessFile: file })
  return {
    ...server,
    file,
    /** Rewrites the file in place, as an operator would (the watch sees it). */
    write: (next: ReadonlyArray<DeclaredPrincipal>) => fs.writeFileSync(file, accessFileText(next)),
    /** Re-reads the file now, as SIGHUP does. */
    reload: () => server.runtime.runPromise(Effect.flatMap(Access, (a) => a.reload))
  }
}

export const bearer = (token: string | undefined): Record<string, string> => (token === undefined ? {} : { authorization: `Bearer ${token}` })

/** A REST request with a token (or none). */
export const rest = (url: string, method: string, route: string, token: string | undefined, body?: unknown) =>
  http(`${url}${route}`, { method, body, headers: bearer(token) })

let nextId = 1

/** A modern MCP request with a token (or none). */
export const modern = (url: string, token: string | undefined, method: string, params: Record<string, unknown> = {}, name?: string) => {
  const req = modernRequest({ id: nextId++, method, params, name, headers: bearer(token) })
  return rawRequest(`${url}${req.path}`, req)
}

/** Legacy sessions by token: opened once per token, as a client holding that token would. */
export const legacySessions = (url: string) => {
  const sessions = new Map<string, string>()
  const open = async (token: string | undefined) => {
    const key = token ?? ""
    const known = sessions.get(key)
    if (known !== undefined) return { session: known }
    const init = await http(`${url}/mcp`, { method: "POST", headers: { ...MCP_HEADERS, ...bearer(token) }, body: initializeBody(nextId++, { name: "access-test", version: "1" }) })
    const session = init.headers.get("mcp-session-id")
    if (session === null) return { refused: init }
    await http(`${url}/mcp`, { method: "POST", headers: { ...MCP_HEADERS, ...bearer(token), "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION }, body: initializedBody() })
    sessions.set(key, session)
    return { session }
  }
  /** A legacy request on the token's session; the refusal of its initialize when it has none. */
  const request = async (token: string | undefined, method: string, params: Record<string, unknown> = {}) => {
    const opened = await open(token)
    if (opened.session === undefined) return opened.refused!
    return http(`${url}/mcp`, {
      method: "POST",
      headers: { ...MCP_HEADERS, ...bearer(token), "mcp-session-id": opened.session, "mcp-protocol-version": LEGACY_VERSION },
      body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params })
    })
  }
  return { open, request, sessionOf: (token: string) => sessions.get(token) }
}
