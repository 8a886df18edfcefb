/**
 * The protected resource metadata (RFC 9728): the document an OAuth client reads to learn which authorization
 * server issues tokens for this server, and which scopes it understands. Served at
 * `/.well-known/oauth-protected-resource` (with the resource's path after it when the configured resource has
 * one, RFC 9728 section 3.1); the 401 and 403 challenges point at it.
 */
import type { IncomingHttpHeaders } from "node:http"

export const WELL_KNOWN_PATH = "/.well-known/oauth-protected-resource"

export interface ProtectedResourceMetadata {
  readonly resource: string
  readonly authorization_servers: ReadonlyArray<string>
  readonly scopes_supported: ReadonlyArray<string>
  readonly bearer_methods_supported: ReadonlyArray<string>
  readonly resource_name?: string
}

/** The document: this resource, its one authorization server (the issuer), the scopes, bearer tokens in the header only. */
export const protectedResourceMetadata = (options: {
  readonly resource: string
  readonly issuer: string
  readonly scopes: ReadonlyArray<string>
  readonly name?: string
}): ProtectedResourceMetadata => ({
  resource: options.resource,
  authorization_servers: [options.issuer],
  scopes_supported: options.scopes,
  bearer_methods_supported: ["header"],
  ...(options.name === undefined ? {} : { resource_name: options.name })
})

/**
 * This server's resource identifier: `WO_OAUTH_RESOURCE` when set; otherwise the origin the request was sent to
 * (its Host, which the edge has checked, over https when a proxy in front says so in `X-Forwarded-Proto`).
 */
export const resourceOf = (configured: string | undefined, headers: IncomingHttpHeaders): string => {
  if (configured !== undefined) return configured
  const forwarded = headers["x-forwarded-proto"]
  const proto = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(",")[0].trim().toLowerCase()
  return `${proto === "https" ? "https" : "http"}://${(headers.host ?? "localhost").toLowerCase()}`
}

/** The path the metadata of `resource` is served at: the well-known path, then the resource's own path if any. */
export const metadataPathOf = (resource: string | undefined): string =>
  resource === undefined ? WELL_KNOWN_PATH : `${WELL_KNOWN_PATH}${new URL(resource).pathname.replace(/\/+$/, "")}`

/** The metadata's URL, as the challenges give it: the resource's origin and `metadataPathOf`. */
export const metadataUrlOf = (resource: string): string => {
  try {
    return `${new URL(resource).origin}${metadataPathOf(resource)}`
  } catch {
    return `${resource}${WELL_KNOWN_PATH}` // an origin from a Host the URL parser does not take: as it came
  }
}

/** The metadata's URL for a request: what the 401 and 403 challenges of that request name. */
export const metadataUrlFor = (configured: string | undefined, headers: IncomingHttpHeaders): string =>
  metadataUrlOf(resourceOf(configured, headers))
