/**
 * The fold thread (projections/views/fold-thread.ts) over a real classic-level store and a real worker thread that
 * loads the pricing sample from its file, as `wo dev` loads an app (tsx, the checkout's sources): it folds what the
 * server's own fold gives, reading the store it is lent; and when the store reopens after a failed write, the
 * reopen ends the thread first (LevelDB then really reopens: a fresh write-ahead log), and the fold goes on on the
 * server's thread, from the start, saying why, to the same value.
 */
import { Effect, Either, Logger, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { MessageChannel } from "node:worker_threads"
import { describe, expect, it } from "vitest"
import type { AppModule } from "../../src/app-loading/app-worker.ts"
import { compileApp } from "../../src/domain/compile.ts"
import type { Change } from "../../src/domain/events.ts"
import { makeClassicLevelLog } from "../../src/log/classic-level/classic-level-log.ts"
import { openDb } from "../../src/log/classic-level/level-db.ts"
import type { EventLogShape } from "../../src/log/event-log.ts"
import { foldInThread } from "../../src/projections/views/fold-thread.ts"
import { serveFold, type FromFoldThread, type ToFoldThread } from "../../src/projections/views/fold-thread-worker.ts"
import { defineApp, entity } from "../../src/domain/catalog.ts"
import { viewDefinition } from "../../src/log/view-record.ts"
import { foldViews } from "../../src/projections/views/view-fold.ts"
import { ROOT } from "../../testkit/spawn.ts"
import { writeAheadLogs } from "../../testkit/dir-files.ts"
import { apps, tempDir } from "../../testkit/server.ts"

const src = (file: string) => pathToFileURL(path.join(ROOT, "src", file)).href
const runtime = src("index.ts")
/** The pricing sample's module, loaded in the worker as `wo dev` loads an app from a checkout. */
const pricing: AppModule = {
  url: pathToFileURL(path.join(ROOT, "examples/pricing/app.ts")).href,
  runtime,
  // tsx's ES module entry (the CommonJS one cannot load it from a worker).
  loader: { tsx: pathToFileURL(path.join(ROOT, "node_modules/tsx/dist/esm/api/index.mjs")).href, loader: src("app-loading/app-loader.ts"), options: { sources: true }, runtime }
}

/** Appends products `from`..`to` (a third in EUR), one batch. */
const appendProducts = (log: EventLogShape, from: number, to: number) => {
  const entries: Array<Change> = []
  for (let id = from; id <= to; id++) {
    const data = { name: `p${id}`, price: id, currency: id % 3 === 0 ? "EUR" : "USD" }
    const event = { seq: id, at: 0, type: "products", id: String(id), version: 1, kind: "created", data }
    entries.push({ event, uri: "", row: { id: String(id), version: 1, ...data }, before: null } as unknown as Change)
  }
  return log.append({ entries, counters: new Map([["products", to]]) })
}


describe("a view folded in a worker thread", () => {
  it("reads the store it is lent; a reopen after a failed write ends the thread first, and the fold goes on here to the same value", async () => {
    const dir = tempDir("wo-fold-thread-unit-")
    const warnings: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) => {
      if (logLevel._tag === "Warning") warnings.push(String(Array.isArray(message) ? message.join(" ") : message))
    })
    const catalog = Either.getOrThrow(compileApp(apps.pricing))
    const view = catalog.views.get("products_by_currency")!
    const outcome = await Effect.runPromise(Effect.gen(function* () {
      const h = yield* openDb(dir, { threads: true })
      const log = yield* makeClassicLevelLog(h, { writer: { acceptDataLoss: false, ackedRecord: false } })
      yield* appendProducts(log, 1, 3000)
      const folder = yield* foldInThread(pricing, log, catalog, [view], "normal")
      yield* folder.readTo(3000)
      const inThread = { json: folder.result().get(view.name)?.valueJson, place: folder.place!(), read: folder.read() }
      // A write fails; the next one reopens the store, which first ends the thread it lent the store to.
      const logsBefore = Math.max(...writeAheadLogs(dir))
      yield* Effect.either(h.write("a write that fails", async () => Promise.reject(new Error("EIO: the disk said no"))))
      yield* appendProducts(log, 3001, 3300)
      const reopened = { reopens: h.reopens(), freshLog: Math.max(...writeAheadLogs(dir)) > logsBefore }
      yield* folder.readTo(3300)
      const here = { json: folder.result().get(view.name)?.valueJson, place: folder.place!(), read: folder.read() }
      const expected = yield* foldViews(log, catalog, [view], true)
      return { inThread, reopened, here, expected: expected.get(view.name)?.valueJson, expected3000: JSON.stringify({ USD: 2000, EUR: 1000 }) }
    }).pipe(Effect.scoped, Effect.provide(Logger.replace(Logger.defaultLogger, logger))))
    expect(outcome.inThread).toEqual({ json: outcome.expected3000, place: "in a worker thread at normal priority", read: 3000 })
    expect(outcome.reopened).toEqual({ reopens: 1, freshLog: true })
    expect(warnings.some((w) => /folding them again on the server's thread, paced, from the start: the worker thread cannot fold them: the store reopened after a failed write, and ended it first/.test(w)), warnings.join("\n")).toBe(true)
    expect(outcome.here).toEqual({ json: outcome.expected, place: "on the server's thread", read: 3300 })
    expect(outcome.expected).toBe(JSON.stringify({ USD: 2200, EUR: 1100 }))
  }, 60_000)
})

/** The pricing sample's products with a view whose evolve works `ms` per event (a heavy evolve, not a stuck one). */
const heavyApp = (ms: number) =>
  defineApp({
    name: "pricing",
    entities: {
      products: entity({ fields: { name: Schema.String, price: Schema.Number, currency: Schema.Literal("USD", "EUR") }, rest: ["list", "get", "create"] })
    },
    views: (view) => ({
      count: view({
        schema: Schema.Struct({ count: Schema.Int }),
        initial: { count: 0 },
        on: { products: ["created"] },
        evolve: (c) => {
          const until = performance.now() + ms
          while (performance.now() < until);
          return { count: c.count + 1 }
        }
      })
    })
  })

describe("the fold thread's side", () => {
  it("says how far it has read once a second of work, not once so many events: a heavy evolve is heard from long before it could count as stuck", async () => {
    const dir = tempDir("wo-fold-thread-progress-")
    const app = heavyApp(3)
    const catalog = Either.getOrThrow(compileApp(app))
    const view = catalog.views.get("count")!
    const heard = await Effect.runPromise(Effect.gen(function* () {
      const h = yield* openDb(dir, { threads: true })
      const log = yield* makeClassicLevelLog(h, { writer: { acceptDataLoss: false, ackedRecord: false } })
      // Three slices of the lent store, each about 0.8 s of evolve (more on a loaded machine): far fewer events than
      // a count would wait for.
      yield* appendProducts(log, 1, 768)
      const loan = yield* log.lendToThread!(async () => undefined)
      return yield* Effect.promise(() => new Promise<Array<FromFoldThread>>((resolve) => {
        const { port1, port2 } = new MessageChannel()
        const messages: Array<FromFoldThread> = []
        port1.on("message", (m: FromFoldThread) => {
          messages.push(m)
          if ("folded" in m || "failed" in m || "refused" in m) {
            port1.close()
            resolve(messages)
          }
        })
        serveFold(port2, app, [{ name: "count", definition: viewDefinition(view) }])
        port1.postMessage({ loan } satisfies ToFoldThread)
        port1.postMessage({ readTo: 768 } satisfies ToFoldThread)
      }))
    }).pipe(Effect.scoped))
    expect(heard[0]).toEqual({ ready: true })
    const last = heard[heard.length - 1]
    expect(last).toMatchObject({ read: 768, to: 768, folded: [{ name: "count", valueJson: JSON.stringify({ count: 768 }), seq: 768 }] })
    // At least one word of progress after a second of work, at a slice's end, in order, before the values.
    const progress = heard.slice(1, -1).map((m) => ("progress" in m ? m.progress : Number.NaN))
    expect(progress.length).toBeGreaterThanOrEqual(1)
    expect(progress.every((seq) => seq === 512 || seq === 768 || seq === 256)).toBe(true)
    expect([...progress].sort((a, b) => a - b)).toEqual(progress)
  }, 60_000)
})
