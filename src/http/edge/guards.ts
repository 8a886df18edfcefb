/**
 * Host and Origin validation: the defence against DNS rebinding. By default only loopback names are
 * accepted as Host and only localhost origins (any port) as Origin; `WO_HOSTS` and `WO_MCP_ORIGINS` add more.
 */
import type { Settings } from "../../support/config.ts"

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"])
const LOCAL_ORIGIN = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/i

/** An authority without userinfo: a name or IPv4 address, or an IPv6 address in brackets; then an optional port. */
const AUTHORITY = /^(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::\d{1,5})?$/

/**
 * The host name without its port, lower-cased: `Example.com:8080` -> `example.com`, `[::1]:80` -> `[::1]`.
 * Undefined unless the whole header is such an authority, so `127.0.0.1:1@evil.com` or `[::1]evil` never
 * pass for the name they start with.
 */
const hostName = (host: string) => AUTHORITY.exec(host.trim().toLowerCase())?.[1]

export interface Guards {
  /** True when the Host header names this server. */
  readonly hostAllowed: (host: string | undefined) => boolean
  /** True when there is no Origin (not a browser) or it is on the allowlist. */
  readonly originAllowed: (origin: string | undefined) => boolean
}

export const makeGuards = (settings: Pick<Settings, "host" | "allowedHosts" | "mcpOrigins">): Guards => {
  const hosts = new Set([...LOOPBACK_HOSTS, ...settings.allowedHosts.map((h) => h.toLowerCase())])
  // Binding to a specific non-wildcard address means clients will name it.
  if (!["0.0.0.0", "::"].includes(settings.host)) hosts.add(settings.host.includes(":") ? `[${settings.host}]` : settings.host)
  const origins = new Set(settings.mcpOrigins.map((o) => o.replace(/\/$/, "").toLowerCase()))
  return {
    hostAllowed: (host) => {
      const name = host === undefined ? undefined : hostName(host)
      return name !== undefined && hosts.has(name)
    },
    originAllowed: (origin) =>
      origin === undefined || LOCAL_ORIGIN.test(origin) || origins.has(origin.replace(/\/$/, "").toLowerCase())
  }
}
