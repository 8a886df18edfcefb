/**
 * The retry storm on the embedded store: the real `wo run examples/blog`, keyed writes (creates and PATCHes) with
 * 24 in flight, `kill -9` right after a random count of answers, cycle after cycle. After each restart the client
 * first retries every write it got no answer to, with its key, then sends every answered write once more.
 * Afterwards, read straight from the log: every intended write is in it exactly once (counted per key), and
 * every answer to a retry equals the first answer received for its key.
 */
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { KeyedClient, type KeyedWrite } from "../../testkit/keyed-client.ts"
import { readStore } from "../../testkit/log-reader.ts"
import { ROOT, spawnServer, tempDir, type SpawnedServer } from "../../testkit/server.ts"

const BLOG = path.join(ROOT, "examples/blog")
const CYCLES = 3
const IN_FLIGHT = 24

describe("retry storm with idempotency keys across kill -9 (embedded store)", () => {
  it("writes every intended change exactly once and answers every retry as the first time", async () => {
    const dataDir = tempDir()
    const client = new KeyedClient()
    const articles: Array<string> = []
    let next = 0
    const newWrite = (): KeyedWrite => {
      const key = `w-${next++}`
      // A PATCH writes its key into the body: the log then says which key each event came from.
      return articles.length < 8 || next % 3 === 0
        ? { key, method: "POST", path: "/api/articles", body: { title: key, body: "", status: "draft", tags: [], author: { name: "storm" } } }
        : { key, method: "PATCH", path: `/api/articles/${articles[next % articles.length]}`, body: { body: key } }
    }
    let server: SpawnedServer | undefined
    let notReplayed = 0
    try {
      for (let cycle = 0; cycle < CYCLES; cycle++) {
        server = await spawnServer(BLOG, dataDir)
        const base = server.loopbackUrl
        expect(await client.retryPending([base])).toEqual([])
        notReplayed += await client.resendAnswered([base], 200)
        // Kill right after a random count of answers (a count, not a time: a slow machine does the same work).
        const killAt = 40 + Math.floor(Math.random() * 80)
        let answered = 0
        let killed = false
        const worker = async () => {
          while (!killed) {
            const w = newWrite()
            const a = await client.send(base, w)
            if (a === undefined) continue
            expect(a.status, a.text).toBeLessThan(300)
            if (w.method === "POST") articles.push(JSON.parse(a.text).id)
            if (++answered === killAt && !killed) {
              killed = true
              await server!.stop("SIGKILL")
            }
          }
        }
        await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
      }
      server = await spawnServer(BLOG, dataDir)
      expect(await client.retryPending([server.loopbackUrl])).toEqual([])
      notReplayed += await client.resendAnswered([server.loopbackUrl])
      await server.stop()
    } finally {
      await server?.stop("SIGKILL").catch(() => undefined)
    }
    const { events } = await readStore(dataDir)
    const perKey = new Map<string, number>()
    for (const e of events) {
      const key = e.kind === "created" ? (e.data.title as string) : (e.data.body as string)
      perKey.set(key, (perKey.get(key) ?? 0) + 1)
    }
    const wrong = [...client.intended.keys()].filter((k) => perKey.get(k) !== 1).map((k) => `${k}: ${perKey.get(k) ?? 0}`)
    console.info(`retry storm (embedded, ${CYCLES} kill -9 cycles): ${client.intended.size} keyed writes, ${events.length} events, ` +
      `${client.unanswered} sends unanswered (${client.landedUnanswered} of them had landed: their retry was a replay), ${client.replays} replays`)
    expect(wrong).toEqual([])
    expect(events.length).toBe(client.intended.size)
    expect(client.mismatches).toEqual([])
    expect(notReplayed).toBe(0)
    // The kills left writes unanswered, and their retries were answered (from the store when they had landed).
    expect(client.unanswered).toBeGreaterThan(0)
  }, 180_000)
})
