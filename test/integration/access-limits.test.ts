/**
 * Per-principal limits from the access file: writes a second (REST 429 with Retry-After, MCP a JSON-RPC error
 * naming the limit on HTTP 429) and open streams; both recover. Another principal is not slowed by them.
 */
import * as fs from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bearer, modern, rest, startWithAccess, tokenOf } from "../../testkit/access-server.ts"
import { parsePrometheusText } from "../../testkit/prom-text.ts"
import { openSse } from "../../testkit/sse.ts"

let server: Awaited<ReturnType<typeof startWithAccess>>

beforeAll(async () => {
  server = await startWithAccess([{ name: "ops", grants: ["admin"] }])
  // Limits are the file's: written with them, then re-read.
  fs.writeFileSync(server.file, JSON.stringify({
    principals: [
      { name: "ops", token: tokenOf("ops"), grants: ["admin"] },
      { name: "slow", token: tokenOf("slow"), grants: ["books:*", "read"], limits: { writesPerSecond: 2, streams: 1 } }
    ]
  }))
  await server.reload()
})
afterAll(() => server?.close())

const create = (who: string) => rest(server.url, "POST", "/api/books", tokenOf(who), { title: "T", author: "A" })

describe("writes a second", () => {
  it("REST: past the bucket, 429 with Retry-After naming the limit, nothing written; later it passes again", async () => {
    const statuses: Array<number> = []
    let refused: Awaited<ReturnType<typeof create>> | undefined
    // Until the first refusal (at most 50 writes): a loaded machine that answers slower than the bucket refills
    // would pass six writes in a row.
    for (let i = 0; i < 50 && refused === undefined; i++) {
      const r = await create("slow")
      statuses.push(r.status)
      if (r.status === 429) refused ??= r
    }
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThanOrEqual(2)
    expect(refused).toBeDefined()
    expect(refused!.json).toMatchObject({ error: "TooManyRequests", limit: "writesPerSecond" })
    expect(Number(refused!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    const written = (await rest(server.url, "GET", "/api/books?limit=100", tokenOf("ops"))).json.items.length
    expect(written).toBe(statuses.filter((s) => s === 201).length)
    // Another principal is not held back.
    expect((await create("ops")).status).toBe(201)
    await new Promise((r) => setTimeout(r, Number(refused!.headers.get("retry-after")) * 1000 + 100))
    expect((await create("slow")).status).toBe(201)
    // Reads are not counted.
    for (let i = 0; i < 5; i++) expect((await rest(server.url, "GET", "/api/books", tokenOf("slow"))).status).toBe(200)
  })

  it("MCP: a JSON-RPC error with code 429 naming the limit, on HTTP 429 with Retry-After", async () => {
    await new Promise((r) => setTimeout(r, 1100))
    const answers: Array<Awaited<ReturnType<typeof modern>>> = []
    for (let i = 0; i < 50 && !answers.some((a) => a.status === 429); i++) {
      answers.push(await modern(server.url, tokenOf("slow"), "tools/call", { name: "books_create", arguments: { title: "M", author: "A" } }, "books_create"))
    }
    const refused = answers.find((a) => a.status === 429)
    expect(refused).toBeDefined()
    expect(refused!.json.error).toMatchObject({ code: 429, data: { limit: "writesPerSecond", value: 2 } })
    expect(refused!.json.error.message).toMatch(/writesPerSecond=2/)
    expect(Number(refused!.headers["retry-after"])).toBeGreaterThanOrEqual(1)
  })
})

describe("open streams", () => {
  it("past the limit a stream is refused with 429; once one closes, another opens", async () => {
    const first = await openSse(`${server.url}/api/_events?from=1`, { headers: bearer(tokenOf("slow")) })
    expect(first.status).toBe(200)
    const second = await openSse(`${server.url}/api/_events?from=1`, { headers: bearer(tokenOf("slow")) })
    expect(second.status).toBe(429)
    second.close()
    const scrape = (await rest(server.url, "GET", "/metrics", tokenOf("ops"))).text
    expect(scrape).toMatch(/wo_principal_streams\{principal="slow"\} 1/)
    const listen = await modern(server.url, tokenOf("slow"), "subscriptions/listen", { notifications: { resourceSubscriptions: ["wo://books/1"] } })
    expect(listen.status).toBe(429)
    expect(listen.json.error).toMatchObject({ code: 429, data: { limit: "streams" } })
    first.close()
    let third = await openSse(`${server.url}/api/_events?from=1`, { headers: bearer(tokenOf("slow")) })
    for (let i = 0; i < 50 && third.status !== 200; i++) {
      third.close()
      await new Promise((r) => setTimeout(r, 100))
      third = await openSse(`${server.url}/api/_events?from=1`, { headers: bearer(tokenOf("slow")) })
    }
    expect(third.status).toBe(200)
    third.close()
  })
})

describe("metrics by principal", () => {
  /** `wo_principal_requests_total` of `principal`, by outcome, as ops scrapes it. */
  const requestsOf = async (principal: string) => {
    const scrape = parsePrometheusText((await rest(server.url, "GET", "/metrics", tokenOf("ops"))).text)
    const counts: Record<string, number> = { admitted: 0, forbidden: 0, limited: 0 }
    for (const outcome of Object.keys(counts)) counts[outcome] = scrape.value("wo_principal_requests_total", { principal, outcome }) ?? 0
    return counts
  }

  it("count each principal's requests admitted, forbidden and limited, each refusal once, on every path", async () => {
    const before = await requestsOf("slow")
    // Writes until its bucket refuses one (two a second).
    let writes = 0
    let limited = 0
    while (limited === 0 && writes < 20) {
      const status = (await create("slow")).status
      writes++
      if (status === 429) limited++
      else expect(status).toBe(201)
    }
    expect(limited).toBe(1)
    expect((await rest(server.url, "GET", "/api/books", tokenOf("slow"))).status).toBe(200)
    // Refused at the edge: one REST write on the direct path, one console read on a fiber.
    expect((await rest(server.url, "POST", "/api/members", tokenOf("slow"), { name: "M" })).status).toBe(403)
    expect((await rest(server.url, "GET", "/api/_rows", tokenOf("slow"))).status).toBe(403)
    // Admitted at the edge, refused inside MCP: a tool it may not call.
    expect((await modern(server.url, tokenOf("slow"), "tools/call", { name: "members_create", arguments: { name: "M" } }, "members_create")).status).toBe(403)
    const after = await requestsOf("slow")
    expect({ admitted: after.admitted - before.admitted, forbidden: after.forbidden - before.forbidden, limited: after.limited - before.limited })
      .toEqual({ admitted: writes - limited + 2, forbidden: 3, limited })
    expect((await requestsOf("ops")).admitted).toBeGreaterThan(0)
  })
})
