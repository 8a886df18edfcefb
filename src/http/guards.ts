/**
 * Host and Origin validation (MCP C5): the defence against DNS rebinding. By default only loopback names are
 * accepted as Host and only localhost origins (any port) as Origin; `WO_HOSTS` and `WO_MCP_ORIGINS` add more.
 */
import type { Settings } from "../config.ts"

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]", "::1"])
const LOCAL_ORIGIN = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/i

/** The host name without its port, lower-cased: `Example.com:8080` -> `example.com`, `[::1]:80` -> `[::1]`. */
const hostName = (host: string) => {
  const h = host.trim().toLowerCase()
  if (h.startsWith("[")) return h.slice(0, h.indexOf("]") + 1)
  const colon = h.indexOf(":")
  return colon === -1 ? h : h.slice(0, colon)
}

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
    hostAllowed: (host) => host !== undefined && hosts.has(hostName(host)),
    originAllowed: (origin) =>
      origin === undefined || LOCAL_ORIGIN.test(origin) || origins.has(origin.replace(/\/$/, "").toLowerCase())
  }
}
