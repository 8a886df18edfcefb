/**
 * `GET /metrics`: the Prometheus text format, parsed strictly (testkit/prom-text.ts), behind the
 * bearer token when one is set; its counters move by exactly the writes made; two servers in one process count
 * apart; WO_METRICS=0 turns it off. Real servers on port 0 over a temp classic-level dir.
 */
import { afterAll, describe, expect, it } from "vitest"
import { openListen } from "../../testkit/modern-client.ts"
import { parsePrometheusText, type Exposition } from "../../testkit/prom-text.ts"
import { apps, http, startServer } from "../../testkit/server.ts"
import type { SseConnection } from "../../testkit/sse.ts"

const TOKEN = "metrics-test-token"
const auth = { authorization: `Bearer ${TOKEN}` }
const servers: Array<{ close: () => Promise<void> }> = []
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()))
})

const scrape = async (url: string, headers: Record<string, string> = auth): Promise<Exposition> => {
  const res = await http(`${url}/metrics`, { headers })
  expect(res.status, res.text).toBe(200)
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/)
  return parsePrometheusText(res.text)
}
const product = { name: "p", price: 1, currency: "USD" }

describe("GET /metrics", () => {
  it("parses as Prometheus text, needs the token, and its counters move by exactly the writes made", async () => {
    const server = await startServer(apps.pricing, { authToken: TOKEN })
    servers.push(server)
    expect((await http(`${server.url}/metrics`)).status).toBe(401)
    expect((await http(`${server.url}/metrics`, { headers: { authorization: "Bearer wrong" } })).status).toBe(401)

    const created = await http(`${server.url}/api/products`, { method: "POST", body: product, headers: auth })
    expect(created.status).toBe(201)
    const id = created.json.id as string
    const listen: SseConnection = await openListen(server.url, "m-1", [`wo://products/${id}`], auth)
    try {
      expect(listen.status).toBe(200)
      expect(await listen.nextJson(10_000)).toBeDefined() // the listen's acknowledgement

      const before = await scrape(server.url)
      expect(before.types.get("wo_commits_total")).toBe("counter")
      expect(before.types.get("wo_commit_duration_seconds")).toBe("histogram")
      expect(before.types.get("wo_writer_queue_depth")).toBe("gauge")
      expect(before.value("wo_commits_total")).toBe(1)
      expect(before.value("wo_open_streams", { kind: "listen" })).toBe(1)

      for (let i = 0; i < 7; i++) {
        const res = await http(`${server.url}/api/products/${id}/set_price`, { method: "POST", body: { price: 10 + i }, headers: auth })
        expect(res.status, res.text).toBe(200)
      }
      const rejected = await http(`${server.url}/api/products/${id}/set_price`, { method: "POST", body: { price: -1 }, headers: auth })
      expect(rejected.status).toBe(422)
      const conflict = await http(`${server.url}/api/products/${id}/set_price`, { method: "POST", body: { price: 5 }, headers: { ...auth, "if-match": '"1"' } })
      expect(conflict.status).toBe(412)
      for (let i = 0; i < 7; i++) expect((await listen.nextJson(10_000))?.json.method).toBe("notifications/resources/updated")

      const after = await scrape(server.url)
      const delta = (name: string, labels?: Record<string, string>) => (after.value(name, labels) ?? 0) - (before.value(name, labels) ?? 0)
      expect(delta("wo_commits_total")).toBe(7)
      expect(delta("wo_events_total", { type: "products", outcome: "written" })).toBe(7)
      expect(delta("wo_refusals_total", { error: "Rejected", code: "not_positive" })).toBe(1)
      expect(delta("wo_refusals_total", { error: "VersionConflict", code: "" })).toBe(1)
      // Every event is in exactly one durable batch: the batch sizes add up to the events.
      expect(delta("wo_batch_events_sum")).toBe(7)
      expect(delta("wo_batch_events_count")).toBe(delta("wo_batches_total", { outcome: "written" }))
      expect(delta("wo_commit_duration_seconds_count")).toBe(delta("wo_batches_total", { outcome: "written" }))
      expect(delta("wo_batches_total", { outcome: "written" })).toBeGreaterThanOrEqual(1)
      expect(after.value("wo_batches_total", { outcome: "failed" }) ?? 0).toBe(0)
      // The listen stream got the 7 notifications, each written once; each delivery's lag was observed.
      expect(delta("wo_notifications_sent_total")).toBe(7)
      expect(delta("wo_notifications_dropped_total")).toBe(0)
      expect(delta("wo_notification_lag_seconds_count")).toBeGreaterThanOrEqual(1)
      expect(after.value("wo_writer_queue_depth")).toBe(0)
      expect(after.value("wo_sessions")).toBe(0)
    } finally {
      listen.close()
    }
  })

  it("keeps the counts of two servers in one process apart", async () => {
    const [a, b] = await Promise.all([startServer(apps.pricing), startServer(apps.pricing)])
    servers.push(a, b)
    for (let i = 0; i < 3; i++) expect((await http(`${a.url}/api/products`, { method: "POST", body: product })).status).toBe(201)
    expect((await http(`${b.url}/api/products`, { method: "POST", body: product })).status).toBe(201)
    expect((await scrape(a.url, {})).value("wo_commits_total")).toBe(3)
    expect((await scrape(b.url, {})).value("wo_commits_total")).toBe(1)
  })

  it("is off with WO_METRICS=0 (404), and writes go on", async () => {
    const server = await startServer(apps.pricing, { metrics: false })
    servers.push(server)
    expect((await http(`${server.url}/api/products`, { method: "POST", body: product })).status).toBe(201)
    const res = await http(`${server.url}/metrics`)
    expect(res.status).toBe(404)
    expect(res.json.message).toMatch(/WO_METRICS=0/)
  })
})
