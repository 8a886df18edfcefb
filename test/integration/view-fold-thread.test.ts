/**
 * A view folded again from the log in a worker thread (projections/views/fold-thread.ts), in real `wo run`
 * processes on a real data dir: the thread's fold gives the value and the seq the server's own fold gives, and
 * whatever keeps the thread from folding (it ends midway, it loads the app differently, it meets a damaged record)
 * leaves the fold to the server's thread, which says why, while the older value keeps answering; a fold stuck in the
 * app's code fails its views instead.
 */
import { ClassicLevel } from "classic-level"
import * as fs from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { writeProducts } from "../../bench/lib/row-writer.ts"
import { writeAppDir } from "../../testkit/app-dir.ts"
import { http, spawnServer, tempDir, type SpawnedServer } from "../../testkit/server.ts"
import { spawnWo } from "../../testkit/spawn.ts"
import { waitFor } from "../../testkit/wait.ts"
import { haveBinaries, sharedCluster, type PgCluster } from "../cluster/pg-cluster.ts"
import { eventKey } from "../../src/log/classic-level/log-keys.ts"

const VIEW_URL = "/api/_views/totals"
const PRODUCTS = 3000
const REPRICED = 50

/**
 * A products app whose view `totals` sums prices by currency. `version` declares it again; `inEvolve` runs first
 * in every evolve; `version` may be an expression (evaluated in each thread that loads the app).
 */
const appSource = (version: string, inEvolve = "") => `
import { Schema } from "effect"
import { isMainThread } from "node:worker_threads"
import { defineApp, entity } from "writeonce"

void isMainThread
export default defineApp({
  name: "pricing",
  entities: {
    products: entity({
      fields: { name: Schema.String, price: Schema.Number, currency: Schema.Literal("USD", "EUR") },
      methods: { set_price: { params: { price: Schema.Number }, apply: (_row, { price }) => ({ price }) } },
      rest: ["list", "get", "create", "set_price"]
    })
  },
  views: (view) => ({
    totals: view({
      schema: Schema.Struct({ USD: Schema.Number, EUR: Schema.Number, count: Schema.Int }),
      initial: { USD: 0, EUR: 0, count: 0 },
      version: ${version},
      on: { products: ["created", "updated", "deleted", "set_price"] },
      evolve: (c, { before, after }) => {
        ${inEvolve}
        const next = { ...c }
        if (before !== null) { next[before.currency] -= before.price; next.count -= 1 }
        if (after !== null) { next[after.currency] += after.price; next.count += 1 }
        return next
      }
    })
  })
})
`

interface Served {
  readonly seq: number
  readonly value: { readonly USD: number; readonly EUR: number; readonly count: number }
}

/** The view once its current declaration is served (a stale mark until then). */
const current = async (url: string): Promise<Served> => {
  for (let polls = 0; polls < 1500; polls++) {
    const res = await http(`${url}${VIEW_URL}`)
    if (res.status === 200 && res.headers.get("wo-view-exact-at") === null) return { seq: res.json.seq, value: res.json.value }
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error("totals was never served from its current declaration")
}

/**
 * `wo run` of a fresh app folder with `source` on `dir`; every fold of a log of at least `threadFrom` events goes to
 * a thread, at normal priority unless `idle`: at idle priority, on a machine whose cores are busy (the tests' own
 * load), the thread may get no CPU at all, and the fold goes on on the server's thread.
 */
const serve = (source: string, dir: string, threadFrom: number, idle = false) =>
  spawnServer(writeAppDir(source), dir, { WO_REFOLD_THREAD_FROM: String(threadFrom), WO_REFOLD_PRIORITY: idle ? "idle" : "normal", WO_LOG_LEVEL: "Debug" })

/** The line that tells where a refold ran, and from how many events. */
const foldedLine = (server: SpawnedServer) => /views: totals folded again from (\d+) events (.*?) in \d+ ms/.exec(server.output())

describe("a view folded again in a worker thread", () => {
  const dir = tempDir("wo-fold-thread-")
  /** The view as the first server left it: folded by a thread from the log, then live through REPRICED set_price calls. */
  let expected: Served

  beforeAll(async () => {
    // Product i (its id) costs i + 1.
    await writeProducts(dir, PRODUCTS, (i) => ({ name: `item-${i}`, price: i + 1, currency: i % 3 === 0 ? "EUR" : "USD" }))
    const first = await serve(appSource("1"), dir, 1)
    try {
      await current(first.loopbackUrl)
      for (let i = 1; i <= REPRICED; i++) {
        const res = await http(`${first.loopbackUrl}/api/products/${i * 7}/set_price`, { method: "POST", body: { price: 1000 + i } })
        expect(res.status, res.text).toBe(200)
      }
      expected = await current(first.loopbackUrl)
      // Its first fold, with no stored value to serve meanwhile, ran in a thread too, at normal priority.
      expect(foldedLine(first)?.[2]).toBe("in a worker thread at normal priority")
    } finally {
      await first.stop()
    }
    // The sums the log holds, computed here: each product's last price.
    const prices = new Map(Array.from({ length: PRODUCTS }, (_, i) => [i + 1, i + 2]))
    for (let i = 1; i <= REPRICED; i++) prices.set(i * 7, 1000 + i)
    const sum = (currency: string) => [...prices].filter(([id]) => (id % 3 === 0 ? "EUR" : "USD") === currency).reduce((s, [, p]) => s + p, 0)
    expect(expected.value).toEqual({ USD: sum("USD"), EUR: sum("EUR"), count: PRODUCTS })
    expect(expected.seq).toBe(PRODUCTS + REPRICED)
  })
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  /**
   * The new declaration's fold in the thread failed (`why`, within `ms`): the older value is served, marked with why,
   * and the fold never went to the server's thread.
   */
  const expectOlderKept = async (server: SpawnedServer, why: RegExp, ms: number) => {
    expect(await waitFor(() => /while folding it again from the log/.test(server.output()), ms), server.output()).toBe(true)
    const res = await http(`${server.loopbackUrl}${VIEW_URL}`)
    expect(res.status).toBe(200)
    expect(res.headers.get("wo-view-exact-at")).toBe(String(expected.seq))
    expect(res.headers.get("wo-view-next-failed")).toMatch(why)
    expect(res.json.value).toEqual(expected.value)
    expect(server.output()).toMatch(/views totals: folding them again from the log in a worker thread/)
    expect(server.output()).not.toMatch(/folding them again on the server's thread/)
  }

  it("serves the value and seq the server's own thread folds, and its older value until the swap", async () => {
    const threaded = await serve(appSource("2"), dir, 1)
    try {
      const first = await http(`${threaded.loopbackUrl}${VIEW_URL}`)
      expect(first.status).toBe(200)
      expect(await current(threaded.loopbackUrl)).toEqual(expected)
      expect(foldedLine(threaded)?.slice(1)).toEqual([String(PRODUCTS + REPRICED), "in a worker thread at normal priority"])
      // The fold read and checked every event: the start's log audit checks only those after it, once it is done.
      expect(await waitFor(() => /log audit: \d+ events verified/.test(threaded.output()), 30_000)).toBe(true)
      expect(threaded.output()).toMatch(new RegExp(`log audit: 0 events verified in \\d+ ms \\(those up to seq ${PRODUCTS + REPRICED} were checked by the views' fold\\)`))
    } finally {
      await threaded.stop()
    }
    const here = await serve(appSource("3"), dir, 1_000_000)
    try {
      expect(await current(here.loopbackUrl)).toEqual(expected)
      // A log shorter than WO_REFOLD_THREAD_FROM is folded on the server's thread: the line names no place.
      expect(foldedLine(here)).toBeNull()
      expect(here.output()).toMatch(new RegExp(`views: totals folded again from ${PRODUCTS + REPRICED} events in \\d+ ms`))
      expect(here.output()).not.toMatch(/worker thread/)
    } finally {
      await here.stop()
    }
  })

  it("at idle priority (the default), folds in a thread that runs when a core is idle, or, starved of CPU, on the server's thread: the same value", async () => {
    const server = await serve(appSource("8"), dir, 1, true)
    try {
      expect(await current(server.loopbackUrl)).toEqual(expected)
      const place = foldedLine(server)?.[2]
      if (place === "in a worker thread at idle priority") expect(server.output()).toMatch(/views totals: folding them again from the log in a worker thread, at idle priority/)
      else {
        expect(place).toBe("on the server's thread")
        expect(server.output()).toMatch(/the worker thread cannot fold them: it made no progress for 10s/)
      }
    } finally {
      await server.stop()
    }
  })

  it("goes on on the server's thread when the worker makes no progress for 10 s", async () => {
    // Its import never settles in the worker (a timer keeps the thread alive): the worker never says it is ready.
    const server = await serve(appSource("9").replace("void isMainThread", "if (!isMainThread) await new Promise(() => setInterval(() => {}, 1000))"), dir, 1)
    try {
      expect(await current(server.loopbackUrl)).toEqual(expected)
      expect(server.output()).toMatch(/views totals: folding them again on the server's thread, paced, from the start: the worker thread cannot fold them: it made no progress for 10s\n/)
      expect(foldedLine(server)?.[2]).toBe("on the server's thread")
    } finally {
      await server.stop()
    }
  })

  it("keeps the older value served, marked with why, when the new evolve throws or returns what its schema refuses in the thread", async () => {
    for (const [version, inEvolve, why] of [
      ["10", 'if (after !== null && after.price === 77) throw new Error("seventy-seven")', /seventy-seven/],
      ["11", "if (after !== null && after.price === 77) return 10n as never", /does not fit its schema/]
    ] as const) {
      const server = await serve(appSource(version, inEvolve), dir, 1)
      try {
        await expectOlderKept(server, why, 30_000)
      } finally {
        await server.stop()
      }
    }
  })

  it("fails the views of a fold stuck in the app's code (an evolve that never returns): the worker is ended, the older value stays served, marked with why, and the server's thread never gets the fold", async () => {
    // Only in the worker: were the fold handed to the server's thread, it would end there, and serve a new value.
    const server = await serve(appSource("12", "if (after !== null && after.price === 77 && !isMainThread) for (;;) {}"), dir, 1)
    try {
      // The loop runs 10 s of CPU before the fold counts as stuck: more time on a loaded machine.
      await expectOlderKept(server, /view totals: its fold in a worker thread ran \d+ s of CPU without finishing a step: an evolve that never returns\?/, 100_000)
    } finally {
      await server.stop()
    }
  })

  it("goes on on the server's thread when the worker ends midway, saying why", async () => {
    const server = await serve(appSource("4", "if (!isMainThread) process.exit(7)"), dir, 1)
    try {
      expect(await current(server.loopbackUrl)).toEqual(expected)
      expect(server.output()).toMatch(/views totals: folding them again on the server's thread, paced, from the start: the worker thread cannot fold them: it ended \(exit code 7\)/)
      expect(foldedLine(server)?.slice(1)).toEqual([String(PRODUCTS + REPRICED), "on the server's thread"])
    } finally {
      await server.stop()
    }
  })

  it("goes on on the server's thread when the app declares the view differently there", async () => {
    const server = await serve(appSource("isMainThread ? 5 : 6"), dir, 1)
    try {
      expect(await current(server.loopbackUrl)).toEqual(expected)
      expect(server.output()).toMatch(/the worker thread cannot fold them: view totals is declared differently in the thread/)
      expect(foldedLine(server)?.[2]).toBe("on the server's thread")
    } finally {
      await server.stop()
    }
  })

  it("keeps the older value served when the thread meets a damaged record, and the server's thread says so too", async () => {
    const copy = tempDir("wo-fold-thread-damaged-")
    fs.cpSync(dir, copy, { recursive: true })
    const db = new ClassicLevel<string, string>(copy, { keyEncoding: "utf8", valueEncoding: "utf8" })
    const key = eventKey(100)
    const value = await db.get(key)
    const damaged = value!.replace(/"item-\d+"/, '"item-x"')
    expect(damaged).not.toBe(value)
    await db.put(key, damaged)
    await db.close()
    const server = await serve(appSource("7"), copy, 1)
    try {
      expect(await waitFor(() => /cannot read the log to fold them again/.test(server.output()), 60_000), server.output()).toBe(true)
      expect(server.output()).toMatch(new RegExp(`the worker thread cannot fold them: a read failed there \\(corrupt record at key ${key}: checksum mismatch\\)`))
      expect(server.output()).toMatch(new RegExp(`cannot read the log to fold them again \\(corrupt record at key ${key}: checksum mismatch\\); trying again\\. The log is damaged: stop the server and run \`wo verify <data-dir>\``))
      const res = await http(`${server.loopbackUrl}${VIEW_URL}`)
      // The older declaration's value, exact where it was stored: never a 503.
      expect(res.status).toBe(200)
      expect(res.headers.get("wo-view-exact-at")).toBe(String(expected.seq))
      expect(res.json.value).toEqual(expected.value)
    } finally {
      await server.stop()
      fs.rmSync(copy, { recursive: true, force: true })
    }
  })
})


describe.skipIf(!haveBinaries)("a view folded again in a worker thread, on PostgreSQL", () => {
  let cluster: PgCluster
  beforeAll(async () => {
    cluster = await sharedCluster()
  }, 120_000)
  afterAll(() => cluster?.stop())

  it("gets the events decoded from the server's thread and serves the value that thread folds", async () => {
    const store = await cluster.createDatabase("fold_thread")
    const onStore = (source: string) =>
      spawnWo(["run", writeAppDir(source), "--listen", "127.0.0.1:0", "--data", tempDir("wo-fold-thread-pg-"), "--store", store], {
        env: { WO_REFOLD_THREAD_FROM: "1", WO_REFOLD_PRIORITY: "normal" }
      })
    const first = await onStore(appSource("1"))
    let before: Served
    try {
      for (let i = 1; i <= 200; i++) {
        const res = await http(`${first.loopbackUrl}/api/products`, { method: "POST", body: { name: `p${i}`, price: i, currency: i % 2 === 0 ? "EUR" : "USD" } })
        expect(res.status, res.text).toBe(201)
      }
      for (let i = 1; i <= 20; i++) {
        const res = await http(`${first.loopbackUrl}/api/products/${i * 3}/set_price`, { method: "POST", body: { price: 500 + i } })
        expect(res.status, res.text).toBe(200)
      }
      before = await current(first.loopbackUrl)
      expect(before.value.count).toBe(200)
      expect(before.seq).toBe(220)
    } finally {
      await first.stop()
    }
    const second = await onStore(appSource("2"))
    try {
      expect(await current(second.loopbackUrl)).toEqual(before)
      expect(foldedLine(second)?.slice(1)).toEqual(["220", "in a worker thread at normal priority"])
    } finally {
      await second.stop()
    }
  })
})
