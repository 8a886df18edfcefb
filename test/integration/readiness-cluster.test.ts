/**
 * `/readyz` on a shared PostgreSQL log: a node whose tailer lags the log by more than
 * WO_READY_MAX_LAG events is not ready until it catches up. Node A is a real `wo` process; node B runs
 * in-process over the real PostgreSQL log, its tailer held back by a gate on `follow` (so that the lag is a
 * count, not a race), then released.
 */
import { Deferred, Effect, Layer, ManagedRuntime, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import pricing from "../../examples/pricing/app.ts"
import { loadSettings } from "../../src/support/config.ts"
import { HttpServer } from "../../src/http/server.ts"
import { EventLog } from "../../src/log/event-log.ts"
import { postgresLogLayer } from "../../src/log/postgres/postgres-log.ts"
import { writeOnceLayer } from "../../src/runtime/runtime.ts"
import type { Spawned } from "../../testkit/spawn.ts"
import { haveBinaries, sharedCluster, startNode, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"
import { parsePrometheusText } from "../../testkit/prom-text.ts"
import { http, tempDir } from "../../testkit/server.ts"

warnIfSkipped("readiness of a lagging node")

describe.skipIf(!haveBinaries)("readiness of a node on a shared PostgreSQL log", () => {
  let cluster: PgCluster
  let store = ""
  let writer: Spawned | undefined
  beforeAll(async () => {
    cluster = await sharedCluster()
    store = await cluster.createDatabase("wo_ready")
    writer = await startNode(store)
  }, 120_000)
  afterAll(async () => {
    await writer?.stop().catch(() => undefined)
    cluster?.stop()
  })

  it("is 503 while its tailer is more than WO_READY_MAX_LAG events behind, and 200 once it caught up", async () => {
    const gate = Effect.runSync(Deferred.make<void>())
    const gatedLog = Layer.effect(
      EventLog,
      Effect.map(EventLog, (log) => EventLog.of({ ...log, follow: (after) => Stream.unwrap(Effect.as(Deferred.await(gate), log.follow!(after))) }))
    ).pipe(Layer.provide(postgresLogLayer(store)))
    const settings = await Effect.runPromise(loadSettings({ dataDir: tempDir("wo-ready-node-") }, { host: "127.0.0.1", port: 0, store, readyMaxLag: 2 }))
    const runtime = ManagedRuntime.make(writeOnceLayer(pricing, settings, { log: gatedLog }))
    try {
      const { url } = await runtime.runPromise(HttpServer)
      expect((await http(`${url}/readyz`)).json).toEqual({ status: "ready" })

      for (let i = 0; i < 5; i++) {
        expect((await http(`${writer!.loopbackUrl}/api/products`, { method: "POST", body: { name: `p${i}`, price: 1, currency: "USD" } })).status).toBe(201)
      }
      const behind = await http(`${url}/readyz`)
      expect(behind.status).toBe(503)
      expect(behind.json).toEqual({ status: "not ready", reason: expect.stringMatching(/ 5 events behind the shared log/) })
      expect(parsePrometheusText((await http(`${url}/metrics`)).text).value("wo_tailer_lag_events")).toBe(5)

      Effect.runSync(Deferred.succeed(gate, undefined))
      let ready = await http(`${url}/readyz`)
      for (let i = 0; i < 100 && ready.status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 100))
        ready = await http(`${url}/readyz`)
      }
      expect(ready.json).toEqual({ status: "ready" })
      expect((await http(`${url}/api/products/5`)).json).toMatchObject({ id: "5", name: "p4" })
      const metrics = parsePrometheusText((await http(`${url}/metrics`)).text)
      expect(metrics.value("wo_tailer_lag_events")).toBe(0)
      expect(metrics.value("wo_tailer_applied_seq")).toBe(5)
      expect(metrics.value("wo_store_failovers_total")).toBe(0)
    } finally {
      await runtime.dispose()
    }
  }, 60_000)
})
