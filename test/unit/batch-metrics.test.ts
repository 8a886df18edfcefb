/**
 * What the writer's durable batches report to metrics (observed-log.ts → metrics.ts `appended`): batches and events
 * by outcome and type, kept as plain sums and handed to prom-client at scrape time; read through the exposition,
 * scraped more than once (each scrape reports the running totals, never a sum counted twice).
 */
import { describe, expect, it } from "@effect/vitest"
import { makeMetrics } from "../../src/metrics/metrics.ts"
import { parsePrometheusText } from "../../testkit/prom-text.ts"

describe("batch metrics", () => {
  it("count batches and events by outcome and type, the same totals at every scrape", async () => {
    const metrics = makeMetrics()
    const empty = parsePrometheusText(await metrics.render())
    expect(empty.value("wo_batches_total", { outcome: "written" })).toBeUndefined()
    expect(empty.value("wo_events_total", { type: "products", outcome: "written" })).toBeUndefined()

    metrics.appended(new Map([["products", 3], ["orders", 1]]), 4, 0.001, true)
    metrics.appended(new Map([["products", 2]]), 2, 0.002, false)
    const first = parsePrometheusText(await metrics.render())
    expect(first.value("wo_batches_total", { outcome: "written" })).toBe(1)
    expect(first.value("wo_batches_total", { outcome: "failed" })).toBe(1)
    expect(first.value("wo_events_total", { type: "products", outcome: "written" })).toBe(3)
    expect(first.value("wo_events_total", { type: "orders", outcome: "written" })).toBe(1)
    expect(first.value("wo_events_total", { type: "products", outcome: "failed" })).toBe(2)
    expect(first.value("wo_events_total", { type: "orders", outcome: "failed" })).toBeUndefined()
    expect(first.value("wo_batch_events_count")).toBe(1)
    expect(first.value("wo_commit_duration_seconds_count")).toBe(2)

    // Nothing new: the same totals. Then one more written batch adds to them.
    const again = parsePrometheusText(await metrics.render())
    expect(again.value("wo_batches_total", { outcome: "written" })).toBe(1)
    expect(again.value("wo_events_total", { type: "products", outcome: "written" })).toBe(3)
    metrics.appended(new Map([["products", 5]]), 5, 0.001, true)
    const later = parsePrometheusText(await metrics.render())
    expect(later.value("wo_batches_total", { outcome: "written" })).toBe(2)
    expect(later.value("wo_batches_total", { outcome: "failed" })).toBe(1)
    expect(later.value("wo_events_total", { type: "products", outcome: "written" })).toBe(8)
    expect(later.value("wo_events_total", { type: "products", outcome: "failed" })).toBe(2)
    expect(later.value("wo_batch_events_sum")).toBe(9)
  })
})
