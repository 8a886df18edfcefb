/**
 * Graceful shutdown under load: SIGTERM to the real binary with 32 writes in flight (REST, legacy and modern
 * MCP), open listen streams and a legacy GET stream.
 */
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { openSession } from "../../testkit/legacy-client.ts"
import { checkStore, readStore } from "../../testkit/log-reader.ts"
import { openListen, SUBSCRIPTION_ID } from "../../testkit/modern-client.ts"
import { openSse, type SseConnection } from "../../testkit/sse.ts"
import { ROOT, runWo, spawnServer, tempDir } from "../../testkit/server.ts"
import { prng, reconcile, runTraffic, sessionRequest, verifyOverHttp, WriteModel } from "../../testkit/write-traffic.ts"

const BLOG = path.join(ROOT, "examples/blog")
/** SIGTERM comes right after this many acknowledged writes, with the others still in flight: a count, not a time. */
const TERM_AT_ACKS = 100

/** Every JSON message of a stream until it ends. */
const readAll = async (s: SseConnection) => {
  const out: Array<any> = []
  for (;;) {
    const m = await s.nextJson(15_000)
    if (m === undefined) return out
    out.push(m.json)
  }
}

describe("graceful shutdown under load", () => {
  it("SIGTERM: acknowledged writes are durable, the rest are refused clearly or cut, listens complete, exit 0 within 10 s", async () => {
    const dataDir = tempDir("wo-term-")
    const server = await spawnServer(BLOG, dataDir)
    const model = new WriteModel()
    const seed = Math.floor(Math.random() * 2 ** 31)

    const uris = Array.from({ length: 20 }, (_, i) => `wo://articles/${i + 1}`)
    const listens = await Promise.all([0, 1, 2].map((i) => openListen(server.url, `L${i}`, uris)))
    for (const l of listens) expect((await l.nextJson())?.json.method).toBe("notifications/subscriptions/acknowledged")
    const session = await openSession(server.url)
    for (const uri of uris.slice(0, 5)) await sessionRequest(server.url, session, "resources/subscribe", { uri })
    const get = await openSse(`${server.url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" } })
    expect(get.status).toBe(200)
    const streams = Promise.all([...listens, get].map(readAll))

    let stop = false
    let reached!: () => void
    const enough = new Promise<void>((resolve) => (reached = resolve))
    const traffic = runTraffic({
      url: server.url,
      model,
      inFlight: 32,
      random: prng(seed),
      tag: `term-${seed}`,
      stop: () => stop,
      onAck: () => {
        if (model.ackedWrites >= TERM_AT_ACKS) reached()
      }
    })
    // If every worker ended first (the server stopped answering), signal anyway: the count check below fails.
    await Promise.race([enough, traffic])
    const ackedBeforeTerm = model.ackedWrites
    const signalled = Date.now()
    const code = await server.stop("SIGTERM")
    const exitMs = Date.now() - signalled
    stop = true
    await traffic
    const messages = await streams

    console.log(`shutdown (seed ${seed}): exit ${code} after ${exitMs} ms; ${model.ackedWrites} writes acknowledged ` +
      `(${model.ackedWrites - ackedBeforeTerm} after SIGTERM), ${model.refusals.length} refused, ${model.connectionErrors} cut`)
    expect(code).toBe(0)
    expect(exitMs).toBeLessThan(10_000)
    expect(server.output()).toMatch(/shutting down: flushing the last batch and closing the store/)
    expect(ackedBeforeTerm).toBeGreaterThanOrEqual(TERM_AT_ACKS) // the load was real, whatever the machine's speed

    // Never a false success, nor an answer that is neither success nor a clear error.
    expect(model.unclear).toEqual([])
    expect(model.answerProblems).toEqual([])
    for (const r of model.refusals) {
      expect(r.status === 503 || r.status === 200, JSON.stringify(r)).toBe(true)
      expect(r.message, JSON.stringify(r)).toMatch(/shutting down|unavailable/i)
    }

    // Each listen ends with its graceful result; the legacy stream just ends.
    listens.forEach((l, i) => {
      const last = messages[i].at(-1)
      expect(last, `listen L${i}`).toMatchObject({ jsonrpc: "2.0", id: `L${i}`, result: { resultType: "complete", _meta: { [SUBSCRIPTION_ID]: `L${i}` } } })
      expect(messages[i].filter((m) => "result" in m)).toHaveLength(1)
      expect(l.ended()).toBe(true)
    })
    expect(get.ended()).toBe(true)

    // Every acknowledged write is durable at its version; the log is whole; replay agrees.
    const snapshot = await readStore(dataDir)
    expect(checkStore(snapshot)).toEqual([])
    const rec = reconcile(model, snapshot)
    expect(rec.problems).toEqual([])
    expect(rec.lost).toBe(0)
    const replay = await runWo(["replay", dataDir])
    expect(replay.code).toBe(0)
    const again = await spawnServer(BLOG, dataDir)
    try {
      expect(await verifyOverHttp(again.url, model)).toEqual([])
    } finally {
      expect(await again.stop("SIGTERM")).toBe(0)
    }
  }, 60_000)
})
