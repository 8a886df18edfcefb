/**
 * What an OAuth client discovers (RFC 9728) and is told when refused (RFC 6750): the protected resource metadata
 * with the library sample's scopes, its route, and the 401 and 403 challenges.
 */
import { describe, expect, it } from "@effect/vitest"
import { extractWWWAuthenticateParams as extractV2 } from "@modelcontextprotocol/client"
import { extractWWWAuthenticateParams as extractV1 } from "@modelcontextprotocol/sdk/client/auth.js"
import { OAuthProtectedResourceMetadataSchema } from "@modelcontextprotocol/sdk/shared/auth.js"
import { Effect, Either, Layer } from "effect"
import library from "../../examples/library/app.ts"
import { insufficientScopeChallenge, unauthorizedChallenge } from "../../src/access/oauth/challenge.ts"
import { metadataPathOf, metadataUrlFor, metadataUrlOf, resourceOf } from "../../src/access/oauth/protected-resource.ts"
import { grantsOf } from "../../src/access/grants.ts"
import { Catalog } from "../../src/domain/app-catalog.ts"
import { compileApp } from "../../src/domain/compile.ts"
import type { EdgeRequest, EdgeResponse } from "../../src/http/edge/edge-types.ts"
import { makeOAuthMetadataRoute } from "../../src/http/routes/oauth-metadata-route.ts"
import { loadSettings, WoConfig, type SettingsInput } from "../../src/support/config.ts"

const ISSUER = "https://issuer.test"

const LIBRARY_SCOPES = [
  "admin", "read", "metrics",
  "books:read", "books:create", "books:update", "books:delete", "books:add_copies", "books:check_out", "books:check_in", "books:*",
  "members:read", "members:create", "members:update", "members:delete", "members:*",
  "loans:read", "loans:create", "loans:update", "loans:delete", "loans:close", "loans:*",
  "command:lend", "command:return",
  "view:loans_by_member"
]

const get = (path: string, headers: Record<string, string> = {}, method = "GET"): EdgeRequest => ({
  method,
  path,
  query: new URLSearchParams(),
  headers: { host: "127.0.0.1:8080", ...headers },
  body: Buffer.alloc(0),
  remoteAddress: "127.0.0.1"
})

const routeWith = (overrides: SettingsInput) =>
  makeOAuthMetadataRoute.pipe(
    Effect.provide(Layer.merge(
      Catalog.layer(library),
      Layer.effect(WoConfig, loadSettings({ dataDir: "/nonexistent" }, overrides))
    ))
  )

const body = (response: EdgeResponse) => (response._tag === "Buffered" ? JSON.parse(response.body ?? "null") : undefined)

describe("scopes_supported", () => {
  it("is every grant the library sample's catalog allows: its types, methods, commands and views", () => {
    expect(grantsOf(Either.getOrThrow(compileApp(library)))).toEqual(LIBRARY_SCOPES)
  })
})

describe("the protected resource metadata route", () => {
  it.effect("serves the document at /.well-known/oauth-protected-resource, the resource from the request's Host", () =>
    Effect.gen(function* () {
      const route = yield* routeWith({ oauthIssuer: ISSUER, oauthAudience: ["http://127.0.0.1:8080"], oauthJwks: "jwks.json" })
      const answer = yield* route(get("/.well-known/oauth-protected-resource"))!
      expect(answer.status).toBe(200)
      expect(body(answer)).toEqual({
        resource: "http://127.0.0.1:8080",
        authorization_servers: [ISSUER],
        scopes_supported: LIBRARY_SCOPES,
        bearer_methods_supported: ["header"],
        resource_name: "library"
      })
      // The official SDK's schema of the document takes it.
      expect(OAuthProtectedResourceMetadataSchema.safeParse(body(answer)).success).toBe(true)
      const proxied = yield* route(get("/.well-known/oauth-protected-resource", { host: "Books.Example", "x-forwarded-proto": "https" }))!
      expect(body(proxied).resource).toBe("https://books.example")
      expect(route(get("/api/books"))).toBeUndefined()
      expect((yield* route(get("/.well-known/oauth-protected-resource", {}, "POST"))!).status).toBe(405)
    }))

  it.effect("with WO_OAUTH_RESOURCE, serves that resource, at the well-known path followed by the resource's path", () =>
    Effect.gen(function* () {
      const resource = "https://books.example/mcp"
      const route = yield* routeWith({ oauthIssuer: ISSUER, oauthAudience: [resource], oauthJwks: "jwks.json", oauthResource: resource })
      expect(route(get("/.well-known/oauth-protected-resource"))).toBeUndefined()
      const answer = yield* route(get("/.well-known/oauth-protected-resource/mcp"))!
      expect(body(answer).resource).toBe(resource)
    }))

  it.effect("answers nothing with OAuth off", () =>
    Effect.gen(function* () {
      const route = yield* routeWith({})
      expect(route(get("/.well-known/oauth-protected-resource"))).toBeUndefined()
    }))
})

describe("where the metadata is", () => {
  it("for a resource without a path, at the root; with one, with the path after the well-known part (RFC 9728 3.1)", () => {
    expect(resourceOf(undefined, { host: "127.0.0.1:8080" })).toBe("http://127.0.0.1:8080")
    expect(metadataUrlFor(undefined, { host: "127.0.0.1:8080" })).toBe("http://127.0.0.1:8080/.well-known/oauth-protected-resource")
    expect(metadataUrlOf("https://books.example/mcp")).toBe("https://books.example/.well-known/oauth-protected-resource/mcp")
    expect(metadataPathOf("https://books.example/")).toBe("/.well-known/oauth-protected-resource")
  })
})

describe("the challenges", () => {
  const metadata = "http://127.0.0.1:8080/.well-known/oauth-protected-resource"

  it("401 without a token names the metadata; with a refused token, also invalid_token and why", () => {
    expect(unauthorizedChallenge(metadata)).toBe(`Bearer resource_metadata="${metadata}"`)
    expect(unauthorizedChallenge(metadata, { description: 'the access token has expired ("exp")' })).toBe(
      `Bearer resource_metadata="${metadata}", error="invalid_token", error_description="the access token has expired ('exp')"`
    )
  })

  it("403 names every scope the request needs, once each, and the metadata", () => {
    expect(insufficientScopeChallenge(["books:read", "command:lend", "books:read"], metadata)).toBe(
      `Bearer error="insufficient_scope", scope="books:read command:lend", resource_metadata="${metadata}"`
    )
    expect(insufficientScopeChallenge(["view:loans_by_member"])).toBe(`Bearer error="insufficient_scope", scope="view:loans_by_member"`)
  })

  it("the official MCP SDK clients (v1 and v2) read the metadata's address, the error and the scopes from them", () => {
    const read = (header: string) => {
      const response = new Response(null, { status: 403, headers: { "www-authenticate": header } })
      const [v1, v2] = [extractV1(response), extractV2(response)]
      expect({ ...v2, errorDescription: undefined }).toEqual({ ...v1, errorDescription: undefined })
      return { ...v2, resourceMetadataUrl: v1.resourceMetadataUrl?.href }
    }
    expect(read(unauthorizedChallenge(metadata))).toMatchObject({ resourceMetadataUrl: metadata, scope: undefined, error: undefined })
    expect(read(unauthorizedChallenge(metadata, { description: "the access token has expired" }))).toEqual({
      resourceMetadataUrl: metadata,
      scope: undefined,
      error: "invalid_token",
      errorDescription: "the access token has expired"
    })
    expect(read(insufficientScopeChallenge(["books:read", "command:lend"], metadata))).toMatchObject({
      resourceMetadataUrl: metadata,
      scope: "books:read command:lend",
      error: "insufficient_scope"
    })
  })
})
