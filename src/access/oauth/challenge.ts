/**
 * The `WWW-Authenticate` challenges of the Bearer scheme (RFC 6750 section 3) as OAuth clients read them: where the
 * protected resource metadata is (RFC 9728 section 5.1), and on a 403, every scope the request needs, because an
 * MCP client asking for more scopes asks for the challenge's plus those it asked for before, and a challenge
 * naming only the missing one would lose the rest on the next step.
 */

/** RFC 6750's characters for a quoted `error_description`: printable ASCII without `"` and `\`. */
const DESCRIPTION_CHARS = /[^\x20-\x21\x23-\x5B\x5D-\x7E]/g
/** A scope token (RFC 6749 section 3.3): printable ASCII without space, `"` and `\`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/

const challenge = (params: ReadonlyArray<readonly [string, string | undefined]>): string => {
  const present = params.filter((p): p is readonly [string, string] => p[1] !== undefined)
  return present.length === 0 ? "Bearer" : `Bearer ${present.map(([k, v]) => `${k}="${v}"`).join(", ")}`
}

/** `text` in those characters: quotes become apostrophes, backslashes slashes, anything else outside them "?". */
const description = (text: string | undefined) =>
  text?.replace(DESCRIPTION_CHARS, (c) => (c === '"' ? "'" : c === "\\" ? "/" : "?"))

/**
 * The 401 challenge: `Bearer resource_metadata="<url>"` when no token came; when one came and was refused,
 * also `error="invalid_token"` and why (RFC 6750 section 3.1).
 */
export const unauthorizedChallenge = (resourceMetadata: string, refused?: { readonly description: string }): string =>
  challenge([
    ["resource_metadata", resourceMetadata],
    ["error", refused === undefined ? undefined : "invalid_token"],
    ["error_description", description(refused?.description)]
  ])

/**
 * The 403 challenge: `Bearer error="insufficient_scope", scope="<every scope the request needs>",
 * resource_metadata="<url>"` (the metadata's address when OAuth is on).
 */
export const insufficientScopeChallenge = (
  scopes: ReadonlyArray<string>,
  resourceMetadata?: string,
  why?: string
): string =>
  challenge([
    ["error", "insufficient_scope"],
    ["scope", [...new Set(scopes.filter((s) => SCOPE_TOKEN.test(s)))].join(" ")],
    ["resource_metadata", resourceMetadata],
    ["error_description", description(why)]
  ])
