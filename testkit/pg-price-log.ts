/**
 * A long log of the pricing sample (examples/pricing) written straight into a PostgreSQL store, through the store's
 * own append (src/log/postgres/append.ts) in batches: `products` products created, then `events` set_price events
 * round-robin over them. Few rows, many events: what a node's start must not pay for.
 */
import { Effect, type Layer, ManagedRuntime } from "effect"
import type { AppendEntry } from "../src/log/event-log.ts"
import { appendBatch } from "../src/log/postgres/append.ts"
import { PgConnection, pgConnectionLayer } from "../src/log/postgres/connection.ts"
import { ensureSchema } from "../src/log/postgres/schema.ts"

export const writePriceLog = async (
  store: string,
  options: { readonly products: number; readonly events: number; readonly batch?: number; readonly timeoutMs?: number }
) => {
  const batch = options.batch ?? 5_000
  const products = Array.from({ length: options.products }, (_, i) =>
    ({ id: String(i + 1), version: 1, name: `p${i}`, price: 1, currency: i % 2 === 0 ? "USD" : "EUR" }))
  const creates: Array<AppendEntry> = products.map((row, i) => ({
    event: { seq: i + 1, at: Date.now(), type: "products", id: row.id, version: 1, schema: 1, kind: "created", data: { name: row.name, price: row.price, currency: row.currency } },
    row: { ...row }
  }))
  // A bound of its own if asked: a large store is written on a machine that may be busy with much else.
  const runtime = ManagedRuntime.make(pgConnectionLayer(store, options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }) as Layer.Layer<PgConnection, unknown>)
  const append = (entries: ReadonlyArray<AppendEntry>, counters: ReadonlyMap<string, number>) =>
    runtime.runPromise(Effect.flatMap(PgConnection, (conn) => appendBatch(conn, { entries, counters })))
  try {
    await runtime.runPromise(Effect.flatMap(PgConnection, ensureSchema))
    // In batches too: one append of a few hundred thousand creates outlasts WO_STORE_TIMEOUT.
    for (let done = 0; done < creates.length; done += batch) {
      const slice = creates.slice(done, done + batch)
      await append(slice, new Map([["products", done + slice.length]]))
    }
    let seq = products.length
    for (let done = 0; done < options.events; done += batch) {
      const entries: Array<AppendEntry> = []
      for (let j = 0; j < Math.min(batch, options.events - done); j++) {
        const row = products[seq % products.length]
        row.price = 1 + (seq % 997)
        row.version++
        entries.push({
          event: { seq: ++seq, at: Date.now(), type: "products", id: row.id, version: row.version, schema: 1, kind: "invoked", method: "set_price", params: { price: row.price }, data: { price: row.price } },
          row: { ...row }
        })
      }
      await append(entries, new Map())
    }
  } finally {
    await runtime.dispose()
  }
}
