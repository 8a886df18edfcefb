/**
 * OAuth resource-server mode end to end, on the library sample served in-process: an issuer's JWTs (keys made here,
 * the key set in a file) authenticate their client; the token's scopes are its grants, on REST and MCP alike; a
 * request without a token is pointed at the protected resource metadata, and one that lacks a scope is told every
 * scope it needs; the client and the subject it acts for are the actor of what it writes; a static token from the
 * access file still works beside it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from "jose"
import library from "../../examples/library/app.ts"
import { accessFileText, rest, tokenOf } from "../../testkit/access-server.ts"
import { modernRequest } from "../../testkit/mcp.ts"
import { freePort, http, rawRequest, startServer, tempDir } from "../../testkit/server.ts"

const ISSUER = "https://issuer.test"

describe("OAuth clients as principals", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  let privateKey: CryptoKey
  let otherKey: CryptoKey
  const sign = (claims: Record<string, unknown>, options: { key?: CryptoKey; exp?: number; audience?: string } = {}) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "ES256", kid: "k1" })
      .setIssuer(ISSUER)
      .setAudience(options.audience ?? "https://library.test")
      .setIssuedAt()
      .setExpirationTime(options.exp ?? Math.floor(Date.now() / 1000) + 600)
      .sign(options.key ?? privateKey)

  beforeAll(async () => {
    const dir = tempDir("wo-oauth-")
    const pair = await generateKeyPair("ES256")
    privateKey = pair.privateKey
    otherKey = (await generateKeyPair("ES256")).privateKey
    fs.writeFileSync(path.join(dir, "jwks.json"), JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "ES256", use: "sig" }] }))
    fs.writeFileSync(path.join(dir, "access.json"), accessFileText([{ name: "librarian", grants: ["books:*"] }]))
    server = await startServer(library, {
      oauthIssuer: ISSUER,
      oauthAudience: ["https://library.test"],
      oauthJwks: path.join(dir, "jwks.json"),
      oauthResource: "https://library.test",
      accessFile: path.join(dir, "access.json")
    })
  })
  afterAll(() => server.close())

  it("serves the protected resource metadata without a token, its scopes from the catalog", async () => {
    const res = await http(`${server.url}/.well-known/oauth-protected-resource`)
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ resource: "https://library.test", authorization_servers: [ISSUER] })
    expect(res.json.scopes_supported).toEqual(expect.arrayContaining(["books:read", "command:lend", "view:loans_by_member"]))
    // A browser-based client reads it from its own origin, after a preflight when it sends MCP-Protocol-Version.
    expect(res.headers.get("access-control-allow-origin")).toBe("*")
    const preflight = await http(`${server.url}/.well-known/oauth-protected-resource`, {
      method: "OPTIONS",
      headers: { origin: "https://client.example", "access-control-request-method": "GET", "access-control-request-headers": "mcp-protocol-version" }
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*")
    expect(preflight.headers.get("access-control-allow-methods")).toMatch(/GET/)
  })

  it("points a request without a token, or with a refused one, at the metadata", async () => {
    const none = await http(`${server.url}/api/books`)
    expect(none.status).toBe(401)
    expect(none.headers.get("www-authenticate")).toBe('Bearer resource_metadata="https://library.test/.well-known/oauth-protected-resource"')
    const expired = await rest(server.url, "GET", "/api/books", await sign({ client_id: "desk", scope: "books:read" }, { exp: Math.floor(Date.now() / 1000) - 120 }))
    expect(expired.status).toBe(401)
    // A token that came and was refused: the challenge says so, and why.
    expect(expired.headers.get("www-authenticate")).toMatch(
      /^Bearer resource_metadata="https:\/\/library\.test\/\.well-known\/oauth-protected-resource", error="invalid_token", error_description="[^"]*expired[^"]*"$/
    )
    expect(expired.json.message).toMatch(/expired/)
    const forged = await rest(server.url, "GET", "/api/books", await sign({ client_id: "desk", scope: "books:read" }, { key: otherKey }))
    expect(forged.status).toBe(401)
    const elsewhere = await rest(server.url, "GET", "/api/books", await sign({ client_id: "desk", scope: "books:read" }, { audience: "https://other.test" }))
    expect(elsewhere.status).toBe(401)
  })

  it("grants what the token's scopes say, and names every scope a refused request needs", async () => {
    const reader = await sign({ client_id: "desk", sub: "alice", scope: "openid books:read" })
    expect((await rest(server.url, "GET", "/api/books", reader)).status).toBe(200)
    const write = await rest(server.url, "POST", "/api/books", reader, { title: "Dune", author: "Frank Herbert" })
    expect(write.status).toBe(403)
    expect(write.json).toMatchObject({ error: "Forbidden", grant: "books:create" })
    expect(write.headers.get("www-authenticate")).toBe(
      'Bearer error="insufficient_scope", scope="books:create", resource_metadata="https://library.test/.well-known/oauth-protected-resource"'
    )
    expect((await rest(server.url, "GET", "/api/books", tokenOf("librarian"))).json.items).toEqual([])
  })

  it("refuses an MCP tool call the scopes do not allow on HTTP 403 with the challenge, and lists only the granted tools", async () => {
    const reader = await sign({ client_id: "desk", sub: "alice", scope: "books:read" })
    const call = modernRequest({ id: 1, method: "tools/call", params: { name: "books_create", arguments: { title: "Dune", author: "Frank Herbert" } }, name: "books_create", headers: { authorization: `Bearer ${reader}` } })
    const refused = await rawRequest(`${server.url}${call.path}`, call)
    expect(refused.status).toBe(403)
    expect(refused.headers["www-authenticate"]).toMatch(/^Bearer error="insufficient_scope", scope="books:create"/)
    const list = modernRequest({ id: 2, method: "tools/list", params: {}, headers: { authorization: `Bearer ${reader}` } })
    const tools = (await rawRequest(`${server.url}${list.path}`, list)).json.result.tools.map((t: { name: string }) => t.name)
    expect(tools).toContain("books_get")
    expect(tools).not.toContain("books_create")
    expect(tools).not.toContain("lend")
  })

  it("records the client and the subject it acts for as the actor of what it writes", async () => {
    const editor = await sign({ client_id: "catalog-bot", sub: "bob", scope: "books:create books:read" })
    const created = await rest(server.url, "POST", "/api/books", editor, { title: "Emma", author: "Jane Austen" })
    expect(created.status).toBe(201)
    const history = await rest(server.url, "GET", `/api/books/${created.json.id}/history`, editor)
    expect(history.json.items.map((e: any) => e.actor)).toEqual([{ principal: "catalog-bot", client: "rest", onBehalfOf: "bob" }])
  })
})

describe("OAuth with the issuer's keys out of reach", () => {
  it("answers a token it cannot check 503 with Retry-After, not 401: the token is not judged", async () => {
    const server = await startServer(library, {
      oauthIssuer: ISSUER,
      oauthAudience: ["https://library.test"],
      // A port nothing listens on: the key set cannot be fetched.
      oauthJwks: `http://127.0.0.1:${await freePort()}/jwks.json`
    })
    try {
      const { privateKey } = await generateKeyPair("ES256")
      const token = await new SignJWT({ client_id: "desk", scope: "books:read" })
        .setProtectedHeader({ alg: "ES256", kid: "k1" })
        .setIssuer(ISSUER)
        .setAudience("https://library.test")
        .setExpirationTime(Math.floor(Date.now() / 1000) + 600)
        .sign(privateKey)
      const res = await rest(server.url, "GET", "/api/books", token)
      expect(res.status).toBe(503)
      expect(res.headers.get("retry-after")).toBe("5")
      expect(res.json.message).toMatch(/cannot be checked now/)
    } finally {
      await server.close()
    }
  })
})

describe("OAuth without WO_OAUTH_RESOURCE", () => {
  it("points every challenge, REST's and MCP's, at the metadata on the host the request named", async () => {
    const dir = tempDir("wo-oauth-host-")
    const pair = await generateKeyPair("ES256")
    fs.writeFileSync(path.join(dir, "jwks.json"), JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "ES256", use: "sig" }] }))
    const server = await startServer(library, { oauthIssuer: ISSUER, oauthAudience: ["https://library.test"], oauthJwks: path.join(dir, "jwks.json") })
    try {
      const reader = await new SignJWT({ client_id: "desk", scope: "books:read" })
        .setProtectedHeader({ alg: "ES256", kid: "k1" })
        .setIssuer(ISSUER)
        .setAudience("https://library.test")
        .setExpirationTime(Math.floor(Date.now() / 1000) + 600)
        .sign(pair.privateKey)
      const metadata = `resource_metadata="${server.url}/.well-known/oauth-protected-resource"`
      const write = await rest(server.url, "POST", "/api/books", reader, { title: "Dune", author: "Frank Herbert" })
      expect(write.status).toBe(403)
      expect(write.headers.get("www-authenticate")).toBe(`Bearer error="insufficient_scope", scope="books:create", ${metadata}`)
      const call = modernRequest({ id: 1, method: "tools/call", params: { name: "books_create", arguments: { title: "Dune", author: "Frank Herbert" } }, name: "books_create", headers: { authorization: `Bearer ${reader}` } })
      const refused = await rawRequest(`${server.url}${call.path}`, call)
      expect(refused.status).toBe(403)
      expect(refused.headers["www-authenticate"]).toBe(`Bearer error="insufficient_scope", scope="books:create", ${metadata}`)
    } finally {
      await server.close()
    }
  })
})
