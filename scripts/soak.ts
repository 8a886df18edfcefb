/**
 * Soak: `node --import tsx scripts/soak.ts` runs the real `wo` binary (blog app) for DURATION_MS (default 10
 * minutes) under mixed load with 1,000 subscribers, then reports memory and errors.
 *
 *  - Subscribers: SUBSCRIBERS (default 1000), half legacy sessions with a GET stream, half modern listen streams
 *    (the server runs with WO_MAX_LISTENS_PER_CLIENT=2000, as they all come from this one address). Each watches
 *    WATCH (default 5) of BASE_ROWS (default 200) rows that are only ever updated.
 *  - Load: WRITERS (default 16) loops, throttled to WRITE_RATE writes per second in all (default 200): updates of
 *    the watched rows over REST, legacy MCP and modern MCP; creates and deletes of rows of their own (kept at a
 *    handful each, so the data set does not grow); reads (REST GET and list, MCP get) in between.
 *  - Checks: every request answered with success; no stream ends before shutdown; once the load stops, every
 *    subscriber has received exactly one notification per acknowledged update of a row it watches; SIGTERM ends
 *    every listen with its graceful result and the server exits 0.
 *  - Memory: VmRSS of the server process (/proc/<pid>/status) at start, after warm-up (WARMUP_MS, default
 *    min(60 s, a third of the run): V8 grows its heap for the first tens of seconds of load), every 10 s (the
 *    maximum is reported), and at the end. SERVER_NODE_OPTIONS is passed to the server as NODE_OPTIONS (for
 *    example --max-old-space-size=300 to see whether the heap fits a bound rather than growing).
 *
 * Exits 1 on any error, or when the RSS at the end exceeds RSS_BOUND (default 1.1, issue 13's budget) times
 * the RSS after warm-up. It prints the notifications missed (acknowledged updates a subscriber never got).
 */
import * as path from "node:path"
import { openSession } from "../testkit/legacy-client.ts"
import { modernCall, openListen } from "../testkit/modern-client.ts"
import { rssKb } from "../testkit/spawn.ts"
import { http, ROOT, spawnServer, tempDir } from "../testkit/server.ts"
import { openSse, type SseConnection } from "../testkit/sse.ts"
import { prng, sessionRequest } from "../testkit/write-traffic.ts"

const int = (name: string, fallback: number) => {
  const raw = process.env[name]
  const n = raw === undefined ? fallback : Number(raw)
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${raw}`)
  return n
}
const DURATION_MS = int("DURATION_MS", 600_000)
const SUBSCRIBERS = int("SUBSCRIBERS", 1000)
const WATCH = int("WATCH", 5)
const BASE_ROWS = int("BASE_ROWS", 200)
const WRITERS = int("WRITERS", 16)
const WRITE_RATE = int("WRITE_RATE", 200)
const WARMUP_MS = int("WARMUP_MS", Math.min(60_000, Math.floor(DURATION_MS / 3)))
const RSS_BOUND = Number(process.env.RSS_BOUND ?? 1.1)
const r = prng(int("SEED", Math.floor(Math.random() * 2 ** 31)))

const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms))
const mb = (kb: number) => `${(kb / 1024).toFixed(1)} MiB`
const log = (line: string) => console.log(`[soak +${((Date.now() - t0) / 1000).toFixed(0)}s] ${line}`)
const t0 = Date.now()

const errors: Array<string> = []
const error = (what: string) => {
  if (errors.length < 200) errors.push(what)
  else if (errors.length === 200) errors.push("... (more errors not listed)")
}

const article = (title: string) => ({ title, body: "soak", status: "draft", tags: ["soak"], author: { name: "Soak" } })

interface Subscriber {
  readonly name: string
  readonly kind: "legacy" | "listen"
  readonly rows: ReadonlyArray<string>
  stream: SseConnection
  received: number
  expected: number
  ended: boolean
  result: boolean
}

let serverOutput: () => string = () => ""

const main = async () => {
  const dataDir = tempDir("wo-soak-")
  const server = await spawnServer(path.join(ROOT, "examples/blog"), dataDir, {
    WO_MAX_LISTENS_PER_CLIENT: "2000",
    ...(process.env.SERVER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.SERVER_NODE_OPTIONS } : {})
  })
  serverOutput = server.output
  server.child.once("exit", (code, signal) => {
    if (!shuttingDown) error(`the server exited during the run (${code ?? signal}): ${server.output().slice(-2000)}`)
  })
  const url = server.url
  const pid = server.child.pid!
  log(`server pid ${pid} at ${url}, data in ${dataDir}; ${DURATION_MS} ms, ${SUBSCRIBERS} subscribers, ${WRITERS} writers at ${WRITE_RATE}/s`)

  for (let i = 1; i <= BASE_ROWS; i++) {
    const res = await http(`${url}/api/articles`, { method: "POST", body: article(`base ${i}`) })
    if (res.status !== 201 || res.json.id !== String(i)) throw new Error(`setup: create ${i} answered ${res.status} ${res.text}`)
  }

  // Subscribers, and who watches which row.
  let shuttingDown = false
  const watchers = new Map<string, Array<Subscriber>>()
  const subscribers: Array<Subscriber> = []
  const pick = () => {
    const set = new Set<string>()
    while (set.size < Math.min(WATCH, BASE_ROWS)) set.add(String(1 + r.int(BASE_ROWS)))
    return [...set]
  }
  for (let i = 0; i < SUBSCRIBERS; i++) {
    const rows = pick()
    const uris = rows.map((id) => `wo://articles/${id}`)
    let stream: SseConnection
    if (i % 2 === 0) {
      const session = await openSession(url)
      for (const uri of uris) {
        const res = await sessionRequest(url, session, "resources/subscribe", { uri })
        if (res.json?.result === undefined) throw new Error(`setup: subscribe answered ${res.status} ${res.text}`)
      }
      stream = await openSse(`${url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" } })
    } else {
      stream = await openListen(url, `listen-${i}`, uris)
      const ack = await stream.nextJson(10_000)
      if (ack?.json.method !== "notifications/subscriptions/acknowledged") throw new Error(`setup: listen ${i} got ${JSON.stringify(ack)}`)
    }
    if (stream.status !== 200) throw new Error(`setup: stream ${i} answered ${stream.status}`)
    const sub: Subscriber = { name: `${i % 2 === 0 ? "legacy" : "listen"}-${i}`, kind: i % 2 === 0 ? "legacy" : "listen", rows, stream, received: 0, expected: 0, ended: false, result: false }
    subscribers.push(sub)
    for (const id of rows) {
      const list = watchers.get(id) ?? []
      list.push(sub)
      watchers.set(id, list)
    }
  }
  const readers = subscribers.map(async (sub) => {
    for (;;) {
      const m = await sub.stream.nextJson(60_000)
      if (m === undefined) {
        if (!sub.stream.ended()) continue
        sub.ended = true
        if (!shuttingDown) error(`${sub.name}: the stream ended during the run`)
        return
      }
      if (m.json.method === "notifications/resources/updated") sub.received++
      else if (m.json.result?.resultType === "complete") sub.result = true
      else error(`${sub.name}: unexpected message ${JSON.stringify(m.json).slice(0, 200)}`)
    }
  })
  const startRss = rssKb(pid)
  log(`setup done: ${BASE_ROWS} rows, ${subscribers.length} streams open; RSS ${mb(startRss)}`)

  // Load.
  const counts = { writes: 0, reads: 0, creates: 0, deletes: 0 }
  const deadline = Date.now() + DURATION_MS
  const perWriterGapMs = (1000 * WRITERS) / WRITE_RATE
  const ok = (what: string, res: { status: number; json?: any; text?: string }) => {
    const failed = res.status >= 300 || res.json?.error !== undefined || res.json?.result?.isError === true
    if (failed) error(`${what}: ${res.status} ${(res.text ?? JSON.stringify(res.json)).slice(0, 200)}`)
    return !failed
  }
  const writer = async (w: number) => {
    const session = await openSession(url)
    const own: Array<string> = []
    let version = 0
    while (Date.now() < deadline) {
      const started = Date.now()
      try {
        const roll = r.next()
        if (roll < 0.1 && own.length < 5) {
          const res = await http(`${url}/api/articles`, { method: "POST", body: article(`own ${w}-${++version}`) })
          if (ok("create", res)) {
            own.push(res.json.id)
            counts.creates++
          }
        } else if (roll < 0.2 && own.length > 0) {
          const id = own.splice(r.int(own.length), 1)[0]
          const res = r.next() < 0.5
            ? await http(`${url}/api/articles/${id}`, { method: "DELETE" })
            : await sessionRequest(url, session, "tools/call", { name: "articles_delete", arguments: { id } })
          if (ok("delete", res)) counts.deletes++
        } else {
          const id = String(1 + r.int(BASE_ROWS))
          const title = `w${w}-${++version}`
          const how = r.int(3)
          const res = how === 0
            ? await http(`${url}/api/articles/${id}`, { method: "PATCH", body: { title } })
            : how === 1
            ? await sessionRequest(url, session, "tools/call", { name: "articles_update", arguments: { id, title } })
            : await modernCall(url, "articles_update", { id, title })
          if (ok(`update ${id}`, res)) {
            counts.writes++
            for (const sub of watchers.get(id) ?? []) sub.expected++
          }
        }
        // A read or two between writes.
        const read = r.int(3)
        const res = read === 0
          ? await http(`${url}/api/articles/${1 + r.int(BASE_ROWS)}`)
          : read === 1
          ? await http(`${url}/api/articles?limit=20`)
          : await sessionRequest(url, session, "tools/call", { name: "articles_get", arguments: { id: String(1 + r.int(BASE_ROWS)) } })
        if (ok("read", res)) counts.reads++
      } catch (e) {
        error(`writer ${w}: ${(e as Error).message}`)
        await sleep(100)
      }
      const rest = perWriterGapMs - (Date.now() - started)
      if (rest > 0) await sleep(rest)
    }
  }

  let warmRss = 0
  let maxRss = startRss
  const sampler = (async () => {
    let lastLog = Date.now()
    while (Date.now() < deadline) {
      await sleep(1000)
      const rss = rssKb(pid)
      maxRss = Math.max(maxRss, rss)
      if (warmRss === 0 && Date.now() - (deadline - DURATION_MS) >= WARMUP_MS) {
        warmRss = rss
        log(`warm-up over: RSS ${mb(warmRss)}`)
      }
      if (Date.now() - lastLog >= 10_000) {
        lastLog = Date.now()
        const received = subscribers.reduce((n, s) => n + s.received, 0)
        log(`RSS ${mb(rss)}; ${counts.writes} updates, ${counts.creates} creates, ${counts.deletes} deletes, ${counts.reads} reads; ${received} notifications; ${errors.length} errors`)
      }
    }
  })()
  await Promise.all([...Array.from({ length: WRITERS }, (_, w) => writer(w)), sampler])
  const endRss = rssKb(pid)
  if (warmRss === 0) warmRss = endRss

  // Let the last notifications arrive, then compare with what was acknowledged.
  const settle = Date.now() + 15_000
  while (Date.now() < settle && subscribers.some((s) => s.received < s.expected)) await sleep(250)
  await sleep(500)
  let expectedTotal = 0
  let receivedTotal = 0
  let missed = 0
  for (const sub of subscribers) {
    expectedTotal += sub.expected
    receivedTotal += sub.received
    missed += Math.max(0, sub.expected - sub.received)
    if (sub.received !== sub.expected) error(`${sub.name}: ${sub.received} notifications for ${sub.expected} acknowledged updates of its rows`)
  }

  shuttingDown = true
  const stopped = Date.now()
  const code = await server.stop("SIGTERM")
  const stopMs = Date.now() - stopped
  await Promise.race([Promise.all(readers), sleep(15_000)])
  if (code !== 0) error(`the server exited ${code} after SIGTERM`)
  const listens = subscribers.filter((s) => s.kind === "listen")
  const graceful = listens.filter((s) => s.result).length
  if (graceful !== listens.length) error(`${listens.length - graceful} of ${listens.length} listens ended without their graceful result`)

  const seconds = (Date.now() - t0) / 1000
  console.log([
    "",
    `soak: ${(DURATION_MS / 1000).toFixed(0)} s of load (${seconds.toFixed(0)} s in all), ${subscribers.length} subscribers (${subscribers.length - listens.length} legacy GET streams, ${listens.length} listens)`,
    `load: ${counts.writes} updates, ${counts.creates} creates, ${counts.deletes} deletes, ${counts.reads} reads (${((counts.writes + counts.creates + counts.deletes) / (DURATION_MS / 1000)).toFixed(0)} writes/s)`,
    `notifications: ${receivedTotal} received, ${expectedTotal} expected, ${missed} missed`,
    `RSS: start ${mb(startRss)}, after warm-up ${mb(warmRss)}, max ${mb(maxRss)}, end ${mb(endRss)} (end/warm-up ${(endRss / warmRss).toFixed(2)})`,
    `shutdown: exit ${code} in ${stopMs} ms; ${graceful}/${listens.length} listens got the graceful result`,
    `errors: ${errors.length}`
  ].join("\n"))
  if (endRss > RSS_BOUND * warmRss) error(`RSS grew from ${mb(warmRss)} after warm-up to ${mb(endRss)} at the end (over ${RSS_BOUND}x)`)
  if (errors.length > 0) {
    console.error(`\nFAILED:\n  ${errors.slice(0, 50).join("\n  ")}`)
    process.exit(1)
  }
  console.log("OK")
  process.exit(0)
}

main().catch((e) => {
  console.error("soak: the harness failed:", e, `\nserver output (tail):\n${serverOutput().slice(-3000)}`)
  if (errors.length) console.error(`errors:\n  ${errors.slice(0, 20).join("\n  ")}`)
  process.exit(2)
})
