/**
 * `GET /.well-known/oauth-protected-resource` (RFC 9728), when OAuth is on: the document a client reads to find
 * the authorization server that issues tokens for this server and the scopes it understands
 * (src/access/oauth/protected-resource.ts). Open without a token, as the discovery it serves must be; it tells
 * nothing about the data, only the catalog's names, as the scopes. Readable from any origin (CORS), since a
 * browser-based client discovers it before it has a token; a preflight (an MCP client's fetch may send
 * MCP-Protocol-Version) is answered too.
 */
import { Effect } from "effect"
import { Catalog } from "../../domain/app-catalog.ts"
import { WoConfig } from "../../support/config.ts"
import { metadataPathOf, protectedResourceMetadata, resourceOf } from "../../access/oauth/protected-resource.ts"
import { grantsOf } from "../../access/grants.ts"
import { empty, errorJson, json, type EdgeRequest, type EdgeResponse } from "../edge/edge-types.ts"

const ANY_ORIGIN = { "access-control-allow-origin": "*" }
const PREFLIGHT = { ...ANY_ORIGIN, "access-control-allow-methods": "GET, HEAD", "access-control-allow-headers": "*", "access-control-max-age": "86400" }

/** The route: its answer for the metadata's path, undefined for any other path (and for every path with OAuth off). */
export const makeOAuthMetadataRoute = Effect.gen(function* () {
  const settings = yield* WoConfig
  const catalog = yield* Catalog
  const issuer = settings.oauthIssuer
  if (issuer === undefined) return (_request: EdgeRequest): Effect.Effect<EdgeResponse> | undefined => undefined
  const path = metadataPathOf(settings.oauthResource)
  const scopes = grantsOf(catalog)
  return (request: EdgeRequest): Effect.Effect<EdgeResponse> | undefined => {
    if (request.path !== path) return undefined
    if (request.method === "OPTIONS") return Effect.succeed(empty(204, PREFLIGHT))
    if (request.method !== "GET") {
      return Effect.succeed(errorJson(405, "MethodNotAllowed", `${request.method} is not supported here`, {}, { allow: "GET, HEAD, OPTIONS" }))
    }
    const resource = resourceOf(settings.oauthResource, request.headers)
    return Effect.succeed(json(200, protectedResourceMetadata({ resource, issuer, scopes, name: catalog.name }), ANY_ORIGIN))
  }
})
