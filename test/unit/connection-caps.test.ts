/**
 * The connection caps' bookkeeping: counts per address and in all, released once on close, the connection idle
 * longest closed first at the total cap (never one with a request in flight), the rate-limited warnings, the
 * defaults derived from the open-file limit, and the two settings.
 */
import { ConfigProvider, Effect } from "effect"
import { describe, expect, it } from "vitest"
import { connectionsLine, connectionsWarning } from "../../src/runtime/announce.ts"
import { loadSettings } from "../../src/support/config.ts"
import { connectionCapsFor, fdLimit, parseProcLimits, storeOpenFiles, UNLIMITED_FILES } from "../../src/support/fd-limit.ts"
import { ConnectionTable, makeRateLimitedLog } from "../../src/http/edge/connection-caps.ts"
import { waitFor } from "../../testkit/wait.ts"

/** A table over named connections, recording which it evicted. */
const tableOf = (perClient: number, total: number) => {
  const evicted: Array<string> = []
  const table = new ConnectionTable<string>({ perClient, total }, (c) => evicted.push(c))
  return { table, evicted }
}

describe("ConnectionTable", () => {
  it("counts connections per address and in all, and refuses past the address's cap", () => {
    const { table } = tableOf(2, 10)
    expect(table.admit("a1", "10.0.0.1")).toBe("admitted")
    expect(table.admit("a2", "10.0.0.1")).toBe("admitted")
    expect(table.admit("a3", "10.0.0.1")).toBe("per-client")
    expect(table.admit("b1", "10.0.0.2")).toBe("admitted")
    expect([table.countOf("10.0.0.1"), table.countOf("10.0.0.2"), table.size]).toEqual([2, 1, 3])
  })

  it("releases a closed connection once, freeing its address's slot", () => {
    const { table } = tableOf(2, 10)
    table.admit("a1", "10.0.0.1")
    table.admit("a2", "10.0.0.1")
    table.closed("a1")
    table.closed("a1")
    table.closed("never-admitted")
    expect([table.countOf("10.0.0.1"), table.size, table.idleCount]).toEqual([1, 1, 1])
    expect(table.admit("a3", "10.0.0.1")).toBe("admitted")
    table.closed("a2")
    table.closed("a3")
    expect([table.countOf("10.0.0.1"), table.size, table.idleCount]).toEqual([0, 0, 0])
  })

  it("at the total cap closes the connection idle longest, never one with a request in flight", () => {
    const { table, evicted } = tableOf(10, 3)
    table.admit("slow", "10.0.0.1") // never sends a whole request: idle since it opened
    table.admit("kept", "10.0.0.2")
    table.admit("busy", "10.0.0.3")
    table.requestStarted("kept")
    table.requestEnded("kept") // answered: idle again, but only since now
    table.requestStarted("busy")
    expect(table.oldestIdle()).toBe("slow")
    expect(table.admit("new1", "10.0.0.4")).toBe("evicted")
    expect(table.admit("new2", "10.0.0.4")).toBe("evicted")
    expect(evicted).toEqual(["slow", "kept"])
    expect([table.size, table.countOf("10.0.0.1"), table.countOf("10.0.0.2"), table.countOf("10.0.0.4")]).toEqual([3, 0, 0, 2])
    // An evicted connection's close, when it comes, changes nothing.
    table.closed("slow")
    expect(table.size).toBe(3)
  })

  it("refuses at the total cap when every connection has a request in flight (pipelined ones counted)", () => {
    const { table, evicted } = tableOf(10, 2)
    table.admit("p", "10.0.0.1")
    table.admit("q", "10.0.0.2")
    table.requestStarted("p")
    table.requestStarted("p") // a pipelined second request
    table.requestStarted("q")
    expect(table.admit("r", "10.0.0.3")).toBe("total")
    table.requestEnded("p")
    expect(table.admit("r", "10.0.0.3")).toBe("total") // p has one more in flight
    table.requestEnded("p")
    expect(table.admit("r", "10.0.0.3")).toBe("evicted")
    expect(evicted).toEqual(["p"])
    expect(table.countOf("10.0.0.3")).toBe(1)
  })
})

describe("makeRateLimitedLog", () => {
  it("writes the first note at once, then one line per interval with the count since, and nothing once quiet", async () => {
    const lines: Array<string> = []
    const log = makeRateLimitedLog(50, (l) => lines.push(l), (who, n) => `others ${who} ${n}`)
    const describe = (who: string, n: number, first: boolean) => `${who} ${first ? "first" : `${n} more`}`
    for (let i = 0; i < 100; i++) log.note("10.0.0.1", describe)
    log.note("10.0.0.2", describe)
    expect(lines).toEqual(["10.0.0.1 first", "10.0.0.2 first"])
    expect(await waitFor(() => lines.length === 3, 5000)).toBe(true)
    expect(lines[2]).toBe("10.0.0.1 99 more")
    // Quiet for an interval: the next note is a first line again.
    await waitFor(() => false, 200)
    expect(lines.length).toBe(3)
    log.note("10.0.0.1", describe)
    log.note("10.0.0.1", describe)
    expect(lines.slice(3)).toEqual(["10.0.0.1 first"])
    log.close()
    expect(lines.slice(4)).toEqual(["10.0.0.1 1 more"])
  })

  it("counts notes past 1024 keys under one line for the other addresses", () => {
    const lines: Array<string> = []
    const log = makeRateLimitedLog(60_000, (l) => lines.push(l), (who, n, first) => `${who}: ${first ? "first" : n}`)
    for (let i = 0; i < 1030; i++) log.note(`a${i}`, (who) => who)
    expect(lines.length).toBe(1025)
    expect(lines[1024]).toBe("other addresses: first")
    log.close()
    expect(lines.slice(1025)).toEqual(["other addresses: 5"])
  })
})

describe("the default caps", () => {
  it("leave a quarter of the open-file limit (64 to 1024 files) for the rest, and give one address half", () => {
    expect(connectionCapsFor(1024)).toEqual({ total: 768, perClient: 384 })
    expect(connectionCapsFor(256)).toEqual({ total: 192, perClient: 96 })
    expect(connectionCapsFor(20_000)).toEqual({ total: 18_976, perClient: 9488 })
    expect(connectionCapsFor(50)).toEqual({ total: 8, perClient: 4 })
    expect(connectionCapsFor(1024, 100)).toEqual({ total: 100, perClient: 50 })
  })

  it("leave LevelDB's table files within the reserve, so a full set of connections and a large store fit the limit", () => {
    for (const files of [256, 1024, 4096, 20_000, UNLIMITED_FILES]) {
      const store = storeOpenFiles(files)
      expect(store).toBeGreaterThanOrEqual(32)
      expect(store).toBeLessThanOrEqual(1000)
      // Half the reserve stays for the rest: PostgreSQL connections, a backup's copies, stdio, the log files.
      expect(connectionCapsFor(files).total + 2 * store).toBeLessThanOrEqual(files)
    }
    expect(storeOpenFiles(1024)).toBe(128)
  })

  it("read the soft limit from /proc/self/limits", () => {
    const text = "Limit                     Soft Limit           Hard Limit           Units     \n" +
      "Max processes             96367                96367                processes \n" +
      "Max open files            1024                 4096                 files     \n"
    expect(parseProcLimits(text)).toBe(1024)
    expect(parseProcLimits(text.replace("1024 ", "unlimited "))).toBe(UNLIMITED_FILES)
    expect(parseProcLimits("nothing here")).toBeUndefined()
    expect(fdLimit().limit).toBeGreaterThan(0)
  })
})

describe("WO_MAX_CONNECTIONS and WO_MAX_CONNECTIONS_PER_CLIENT", () => {
  const load = (env: Record<string, string>) =>
    Effect.runPromise(
      Effect.either(loadSettings({ dataDir: "/tmp/unused" })).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
    )
  const caps = async (env: Record<string, string>) => {
    const s = await load(env)
    return s._tag === "Right" ? [s.right.maxConnections, s.right.maxConnectionsPerClient] : s.left._tag
  }

  it("default to the caps of this process's open-file limit; a set total halves for one address", async () => {
    const derived = connectionCapsFor(fdLimit().limit)
    expect(await caps({})).toEqual([derived.total, derived.perClient])
    expect(await caps({ WO_MAX_CONNECTIONS: "100" })).toEqual([100, 50])
    expect(await caps({ WO_MAX_CONNECTIONS: "100", WO_MAX_CONNECTIONS_PER_CLIENT: "7" })).toEqual([100, 7])
  })

  it("are logged at start with the open-file limit, with a warning when the total leaves no room below it", () => {
    const files = fdLimit().limit
    expect(connectionsLine({ maxConnections: 100, maxConnectionsPerClient: 7 })).toBe(
      `connections: at most 7 per client address (WO_MAX_CONNECTIONS_PER_CLIENT), 100 in all (WO_MAX_CONNECTIONS); open-file limit ${files} (${fdLimit().source})`
    )
    expect(connectionsWarning({ maxConnections: connectionCapsFor(files).total })).toBeUndefined()
    expect(connectionsWarning({ maxConnections: files })).toMatch(new RegExp(`^WO_MAX_CONNECTIONS=${files} is not below the open-file limit ${files}`))
  })

  it("refuse a value that is not a positive integer", async () => {
    for (const name of ["WO_MAX_CONNECTIONS", "WO_MAX_CONNECTIONS_PER_CLIENT"]) {
      for (const bad of ["0", "-1", "many", "1.5"]) expect(await caps({ [name]: bad }), `${name}=${bad}`).not.toBeInstanceOf(Array)
    }
  })
})
