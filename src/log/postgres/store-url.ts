/**
 * The `--store` connection string: `postgres://user[:password]@host1[:port1][,host2[:port2]...]/database[?params]`.
 *
 * libpq accepts several hosts and, with `target_session_attrs=read-write`, connects to the writable one. The
 * `pg` client parses one host only (pg-connection-string throws on a list), so the list is parsed here and the
 * primary is found by connection.ts. writeonce writes, so it always looks for a writable server: the only
 * `target_session_attrs` values accepted are `read-write` and `primary`.
 */
import { Either } from "effect"

export interface StoreHost {
  readonly host: string
  readonly port: number
}

export interface StoreTarget {
  readonly hosts: ReadonlyArray<StoreHost>
  readonly user?: string
  readonly password?: string
  readonly database?: string
  /** Seconds to wait for each host to answer (`connect_timeout`, libpq's name; default 5). */
  readonly connectTimeout: number
  readonly applicationName: string
  /** `sslmode=require` (or verify-*): TLS to every host. */
  readonly ssl: boolean
}

const URL_SHAPE = /^postgres(?:ql)?:\/\/(?:([^@/]*)@)?([^/?#]*)(?:\/([^?#]*))?(?:\?([^#]*))?$/

const hostOf = (part: string): StoreHost | string => {
  const m = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(part)
  if (!m) return `"${part}" is not HOST[:PORT]`
  const port = m[2] === undefined ? 5432 : Number(m[2])
  if (port < 1 || port > 65535) return `port ${m[2]} is out of range`
  return { host: decodeURIComponent(m[1].replace(/^\[|\]$/g, "")), port }
}

/** The store URL parsed, or why it cannot be used. */
export const parseStoreUrl = (url: string): Either.Either<StoreTarget, string> => {
  const m = URL_SHAPE.exec(url.trim())
  if (!m) return Either.left(`expected postgres://user@host:port[,host:port...]/database, got "${redactStoreUrl(url)}"`)
  const [, userinfo, hostList, database, query] = m
  const hosts: Array<StoreHost> = []
  for (const part of hostList.split(",").filter((p) => p.length > 0)) {
    const host = hostOf(part)
    if (typeof host === "string") return Either.left(`store URL: ${host}`)
    hosts.push(host)
  }
  if (hosts.length === 0) return Either.left("store URL: no host (postgres://user@host:port/database)")
  let user: string | undefined
  let password: string | undefined
  if (userinfo !== undefined && userinfo.length > 0) {
    const colon = userinfo.indexOf(":")
    user = decodeURIComponent(colon < 0 ? userinfo : userinfo.slice(0, colon))
    if (colon >= 0) password = decodeURIComponent(userinfo.slice(colon + 1))
  }
  let connectTimeout = 5
  let applicationName = "writeonce"
  let ssl = false
  for (const [key, value] of new URLSearchParams(query ?? "")) {
    switch (key) {
      case "target_session_attrs":
        if (value !== "read-write" && value !== "primary") {
          return Either.left(`store URL: target_session_attrs=${value}: writeonce writes, so it needs read-write (the default)`)
        }
        break
      case "connect_timeout": {
        const n = Number(value)
        if (!Number.isInteger(n) || n <= 0) return Either.left(`store URL: connect_timeout must be a positive number of seconds`)
        connectTimeout = n
        break
      }
      case "application_name":
        applicationName = value
        break
      case "sslmode":
        if (!["disable", "prefer", "require", "verify-ca", "verify-full"].includes(value)) return Either.left(`store URL: unknown sslmode ${value}`)
        ssl = value !== "disable" && value !== "prefer"
        break
      default:
        return Either.left(`store URL: unsupported parameter ${key} (supported: target_session_attrs, connect_timeout, application_name, sslmode)`)
    }
  }
  const db = database === undefined || database.length === 0 ? undefined : decodeURIComponent(database)
  return Either.right({ hosts, user, password, database: db, connectTimeout, applicationName, ssl })
}

/** The URL with its password hidden, for logs and errors. */
export const redactStoreUrl = (url: string) => url.replace(/^(postgres(?:ql)?:\/\/[^:@/]*):[^@/]*@/, "$1:***@")

export const describeHost = (h: StoreHost) => (h.host.includes(":") ? `[${h.host}]:${h.port}` : `${h.host}:${h.port}`)
