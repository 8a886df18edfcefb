/**
 * Caps on open HTTP connections, per client address (`WO_MAX_CONNECTIONS_PER_CLIENT`) and in all
 * (`WO_MAX_CONNECTIONS`), decided at the node:http server's `connection` event, before a byte is parsed. Without
 * them, one client holding idle connections (a slowloris sends a header byte now and then) takes every file the
 * process may open, and every other client's connection is reset: nothing serves, and nothing says why.
 *
 * - Past the client's cap, the new connection is closed at once.
 * - At the total cap, the connection idle longest is closed to make room for the new one; only when none is idle
 *   (every connection has a request in flight, or a stream open) is the new one closed.
 * - Either is logged as a warning naming the address and the cap, at most once per address per interval, with the
 *   count of refusals since the previous line.
 *
 * The edge is a hot path: the bookkeeping is O(1) per connection and per request (a map of counts per address, a
 * map of open connections, and an insertion-ordered set of the idle ones whose first element is the one idle
 * longest). Streams (SSE) keep their own caps; an open stream is a connection with a request in flight.
 */
import type * as http from "node:http"
import type * as net from "node:net"
import type { ConnectionCaps } from "../../support/fd-limit.ts"

export type { ConnectionCaps }

/** What `admit` decided: admitted (perhaps after closing an idle connection), or refused by one of the caps. */
export type Admission = "admitted" | "evicted" | "per-client" | "total"

interface Entry {
  readonly address: string
  /** Requests read but not yet answered (more than one when a client pipelines). */
  inFlight: number
}

/**
 * The open connections, counted per address and in all, and which are idle. Generic in the connection so that
 * the rule is testable on its own; `evict` closes a connection chosen to make room.
 *
 * A connection that has not yet sent a whole request (a slowloris among them) is idle here: it is in the idle set
 * from the moment it opens until its first request is read. Waiting for the request timeout instead
 * (`WO_REQUEST_TIMEOUT_MS`, 30 s by default) would refuse every fresh client for that long while the process is at
 * its cap. Closing such a connection loses no work (nothing of it has been handled), and a real client retries on
 * a new connection as it does when a keep-alive connection is closed. A connection goes to the back of the set
 * each time it answers a request, so one that never sent a request is closed before every connection that was
 * answered after it opened, and a fresh client's connection, the newest, is the last one closed.
 */
export class ConnectionTable<C> {
  private readonly byAddress = new Map<string, number>()
  private readonly open = new Map<C, Entry>()
  /** Idle connections, the one idle longest first (a Set iterates in insertion order). */
  private readonly idle = new Set<C>()

  constructor(readonly caps: ConnectionCaps, private readonly evict: (connection: C) => void) {}

  /** Connections open in all. */
  get size() {
    return this.open.size
  }
  /** Connections open from `address`. */
  countOf(address: string) {
    return this.byAddress.get(address) ?? 0
  }
  /** Connections with no request in flight. */
  get idleCount() {
    return this.idle.size
  }
  /** The connection that the next eviction would close. */
  oldestIdle(): C | undefined {
    return this.idle.values().next().value
  }

  /** Counts a new connection from `address`, or says which cap refuses it (then it is not counted). */
  admit(connection: C, address: string): Admission {
    const mine = this.byAddress.get(address) ?? 0
    if (mine >= this.caps.perClient) return "per-client"
    let outcome: Admission = "admitted"
    if (this.open.size >= this.caps.total) {
      const oldest = this.oldestIdle()
      if (oldest === undefined) return "total"
      this.closed(oldest)
      this.evict(oldest)
      outcome = "evicted"
    }
    this.open.set(connection, { address, inFlight: 0 })
    this.byAddress.set(address, (this.byAddress.get(address) ?? 0) + 1)
    this.idle.add(connection)
    return outcome
  }

  /** A whole request head was read on `connection`: it is busy until the answer ends. */
  requestStarted(connection: C) {
    const entry = this.open.get(connection)
    if (entry === undefined) return
    entry.inFlight++
    this.idle.delete(connection)
  }

  /** An answer on `connection` ended (sent, or the client left): idle again once none is in flight. */
  requestEnded(connection: C) {
    const entry = this.open.get(connection)
    if (entry === undefined || entry.inFlight === 0) return
    if (--entry.inFlight === 0) this.idle.add(connection)
  }

  /** The connection closed (or was evicted): its counts are released, once. */
  closed(connection: C) {
    const entry = this.open.get(connection)
    if (entry === undefined) return
    this.open.delete(connection)
    this.idle.delete(connection)
    const n = (this.byAddress.get(entry.address) ?? 1) - 1
    if (n === 0) this.byAddress.delete(entry.address)
    else this.byAddress.set(entry.address, n)
  }
}

/** A line of the rate-limited log: `count` events since the previous line of its key (1 for the first). */
export type Describe = (who: string, count: number, first: boolean) => string

/** Keys tracked apart at once; past them, notes share one key, so that many addresses cannot grow the map. */
const MAX_KEYS = 1024
const OTHERS = "other addresses"

/**
 * Warnings at most once per key per `intervalMs`: the first at once, then, while more come, one line per interval
 * with their count. Past `MAX_KEYS` keys, notes are counted under "other addresses" and described by `others`.
 * Timers are unref'd; `close` writes what is still counted.
 */
export const makeRateLimitedLog = (intervalMs: number, write: (line: string) => void, others: Describe) => {
  const pending = new Map<string, { count: number; describe: Describe; timer: ReturnType<typeof setTimeout> }>()
  const due = (key: string) => {
    const entry = pending.get(key)
    if (entry === undefined) return
    if (entry.count === 0) {
      pending.delete(key)
      return
    }
    write(entry.describe(key, entry.count, false))
    entry.count = 0
    entry.timer = setTimeout(due, intervalMs, key).unref()
  }
  return {
    note: (key: string, describe: Describe) => {
      const apart = pending.has(key) || pending.size < MAX_KEYS
      const k = apart ? key : OTHERS
      const entry = pending.get(k)
      if (entry !== undefined) {
        entry.count++
        return
      }
      const d = apart ? describe : others
      write(d(k, 1, true))
      pending.set(k, { count: 0, describe: d, timer: setTimeout(due, intervalMs, k).unref() })
    },
    close: () => {
      for (const [key, entry] of pending) {
        clearTimeout(entry.timer)
        if (entry.count > 0) write(entry.describe(key, entry.count, false))
      }
      pending.clear()
    }
  }
}

/** How often the refusals of one address are logged at most. */
export const WARNING_INTERVAL_MS = 10_000

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`

/** The warnings, naming the address and the cap. */
const refusedPerClient = (caps: ConnectionCaps, intervalMs: number): Describe => (who, count, first) =>
  first
    ? `refused a connection from ${who}: it holds ${caps.perClient} open connections, the most one client address may (WO_MAX_CONNECTIONS_PER_CLIENT=${caps.perClient}); further refusals are counted and logged at most every ${seconds(intervalMs)}`
    : `refused ${count} more connections from ${who} since the last warning about it: it holds ${caps.perClient} open connections (WO_MAX_CONNECTIONS_PER_CLIENT=${caps.perClient})`

const refusedTotal = (caps: ConnectionCaps, intervalMs: number): Describe => (who, count, first) =>
  first
    ? `refused a connection from ${who}: ${caps.total} connections are open, the most in all, and none is idle (WO_MAX_CONNECTIONS=${caps.total}); further refusals are counted and logged at most every ${seconds(intervalMs)}`
    : `refused ${count} more connections from ${who} since the last warning about it: ${caps.total} connections are open and none is idle (WO_MAX_CONNECTIONS=${caps.total})`

const refusedOthers = (caps: ConnectionCaps): Describe => (who, count, first) =>
  `refused ${first ? "a connection" : `${count} more connections`} from ${who}${first ? "" : " since the last warning about them"}: past WO_MAX_CONNECTIONS_PER_CLIENT=${caps.perClient} or WO_MAX_CONNECTIONS=${caps.total}`

/** Evictions are one key: the first line names the address that needed room, the later ones count. */
const EVICTED = "evicted"
const evictedIdle = (caps: ConnectionCaps, intervalMs: number, address: string): Describe => (_, count, first) =>
  first
    ? `closed the connection idle longest to make room for one from ${address}: ${caps.total} connections are open, the most in all (WO_MAX_CONNECTIONS=${caps.total}); further closes are counted and logged at most every ${seconds(intervalMs)}`
    : `closed ${count} more idle connections since the last warning about it, to make room for new ones: ${caps.total} connections are open (WO_MAX_CONNECTIONS=${caps.total})`

export interface CappedConnections {
  /** Call as a request's head is read (the server's request listener): the connection is busy until it answers. */
  readonly requestStarted: (req: http.IncomingMessage, res: http.ServerResponse) => void
  readonly table: ConnectionTable<net.Socket>
  /** Writes the refusals still counted, and stops the log's timers. */
  readonly close: () => void
}

/** Caps `server`'s connections; `warn` writes a warning line. */
export const capConnections = (
  server: http.Server,
  caps: ConnectionCaps,
  warn: (line: string) => void,
  intervalMs = WARNING_INTERVAL_MS
): CappedConnections => {
  const table = new ConnectionTable<net.Socket>(caps, (socket) => socket.destroy())
  const log = makeRateLimitedLog(intervalMs, warn, refusedOthers(caps))
  const perClient = refusedPerClient(caps, intervalMs)
  const total = refusedTotal(caps, intervalMs)
  // One listener of each kind for every connection and answer (they use `this`), not a closure each.
  function onSocketClose(this: net.Socket) {
    table.closed(this)
  }
  function onAnswerClose(this: http.ServerResponse) {
    const socket = this.req.socket
    if (!socket.destroyed) table.requestEnded(socket)
  }
  // Added after node:http's own listener (which only sets up the parser): a refused socket is destroyed before
  // any of its bytes is read.
  server.on("connection", (socket: net.Socket) => {
    const address = socket.remoteAddress
    if (address === undefined) return void socket.destroy() // already gone
    const outcome = table.admit(socket, address)
    if (outcome === "per-client" || outcome === "total") {
      socket.destroy()
      log.note(address, outcome === "per-client" ? perClient : total)
      return
    }
    if (outcome === "evicted") log.note(EVICTED, evictedIdle(caps, intervalMs, address))
    socket.on("close", onSocketClose)
  })
  return {
    requestStarted: (req, res) => {
      table.requestStarted(req.socket)
      res.on("close", onAnswerClose)
    },
    table,
    close: log.close
  }
}
