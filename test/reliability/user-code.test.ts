/**
 * User code cannot stop the writer: a method whose `apply` throws fails only its own command (REST 500
 * MethodFailed, MCP isError in both eras), is logged with type, id, method and stack, writes nothing, and the
 * rest of its batch commits. If the writer dies anyway (a bug of ours, injected here), nobody hangs.
 */
import { Deferred, Effect, Either, Layer, Logger, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { Commands, type Command } from "../../src/commands/commands.ts"
import { GroupCommit } from "../../src/commands/group-commit.ts"
import { LogFaults } from "../../testkit/log-faults.ts"
import { defineApp, entity } from "../../src/domain/catalog.ts"
import { callTool } from "../../testkit/legacy-client.ts"
import { modernCall } from "../../testkit/modern-client.ts"
import { checkStore, readStore } from "../../testkit/log-reader.ts"
import * as path from "node:path"
import { ROOT, spawnNode, WO_READY } from "../../testkit/spawn.ts"
import { http, startServer, tempDir } from "../../testkit/server.ts"
import { waitFor } from "../../testkit/wait.ts"

/** The pricing app, with a set_price that throws on 13 and a restock that throws a non-Error. */
const throwingApp = defineApp({
  name: "pricing",
  entities: {
    products: entity({
      fields: { name: Schema.String, price: Schema.Number },
      methods: {
        set_price: {
          params: { price: Schema.Number },
          apply: (_row, { price }) => {
            if (price === 13) throw new Error("unlucky price")
            return { price: price === 7 ? Number.POSITIVE_INFINITY : price }
          }
        },
        restock: {
          params: {},
          apply: () => {
            throw "a string, not an Error" // eslint-disable-line no-throw-literal
          }
        }
      }
    })
  }
})

/** A logger that keeps every line, to assert on what the server logged. */
const capturingLogger = (lines: Array<string>) =>
  Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ logLevel, message }) => {
      lines.push(`${logLevel.label} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
    })
  )

describe("a method that throws", () => {
  it("fails only its own command, inside a batch whose other commands commit, and the next write succeeds", async () => {
    const logs: Array<string> = []
    const gate = Effect.runSync(Deferred.make<void>())
    let held = 0
    let holding = false
    const batchSizes: Array<number> = []
    const faults = Layer.succeed(LogFaults, {
      beforeWrite: (events) => {
        batchSizes.push(events)
        return holding ? Effect.sync(() => held++).pipe(Effect.zipRight(Deferred.await(gate))) : Effect.void
      }
    })
    const server = await startServer(throwingApp, {}, Layer.merge(faults, capturingLogger(logs)))
    try {
      expect((await http(`${server.url}/api/products`, { method: "POST", body: { name: "a", price: 1 } })).status).toBe(201)
      // Hold one write so that the next three commands queue up and are decided together, in one batch.
      holding = true
      const first = http(`${server.url}/api/products/1/set_price`, { method: "POST", body: { price: 5 } })
      expect(await waitFor(() => held === 1)).toBe(true)
      holding = false
      // Three commands queued behind the held write, so the writer decides them together, in one batch.
      let accepted = 0
      const onStage = (stage: string) => {
        if (stage === "accepted") accepted++
      }
      const run = (command: Command) =>
        server.runtime.runPromise(Effect.either(Effect.flatMap(Commands, (c) => c.execute(command, { onStage }))))
      const batch = [
        run({ _tag: "Invoke", type: "products", id: "1", method: "set_price", input: { price: 14 } }),
        run({ _tag: "Invoke", type: "products", id: "1", method: "set_price", input: { price: 13 } }),
        run({ _tag: "Create", type: "products", input: { name: "b", price: 2 } })
      ]
      expect(await waitFor(() => accepted === 3)).toBe(true)
      batchSizes.length = 0
      Effect.runSync(Deferred.succeed(gate, undefined))
      expect((await first).status).toBe(200)
      const [ok, thrown, created] = await Promise.all(batch)
      expect(Either.isRight(ok) && ok.right.event.version).toBe(3)
      expect(Either.isRight(created) && created.right.event.id).toBe("2")
      expect(Either.isLeft(thrown) && thrown.left).toMatchObject({ _tag: "MethodFailed", message: "set_price failed: unlucky price" })
      // After the held batch: one batch with the two commands that did not throw.
      expect(batchSizes).toEqual([2])

      // REST says the same: 500 MethodFailed.
      const rest = await http(`${server.url}/api/products/1/set_price`, { method: "POST", body: { price: 13 } })
      expect(rest.status).toBe(500)
      expect(rest.json).toEqual({ error: "MethodFailed", message: "set_price failed: unlucky price" })

      // The writer goes on: the next write on the same row succeeds, at the next version.
      const next = await http(`${server.url}/api/products/1/set_price`, { method: "POST", body: { price: 15 } })
      expect(next.status).toBe(200)
      expect(next.json).toMatchObject({ id: "1", version: 4, price: 15 })

      // Logged with type, id, method and the stack of the throw.
      const line = logs.find((l) => l.includes("set_price failed: unlucky price"))
      expect(line).toBeDefined()
      expect(line).toMatch(/^ERROR products 1: set_price failed: unlucky price/)
      expect(line).toMatch(/at apply|at .*user-code\.test\.ts/)
    } finally {
      await server.close()
    }
    // Nothing was written for the thrown command: versions 1..4 of product 1, no event with price 13.
    const store = await readStore(server.dataDir)
    expect(checkStore(store)).toEqual([])
    expect(store.events.filter((e) => e.type === "products" && e.id === "1").map((e) => e.data.price ?? null)).toEqual([1, 5, 14, 15])
  })

  it("answers MCP callers with isError in both eras, and a non-Error throw too", async () => {
    const server = await startServer(throwingApp)
    try {
      expect((await http(`${server.url}/api/products`, { method: "POST", body: { name: "a", price: 1 } })).status).toBe(201)
      const legacy = await callTool(server.url, "products_set_price", { id: "1", price: 13 })
      expect(legacy.isError).toBe(true)
      expect(legacy.content[0].text).toContain("set_price failed: unlucky price")
      const modern = await modernCall(server.url, "products_set_price", { id: "1", price: 13 })
      expect(modern.status).toBe(200)
      expect(modern.json.result.isError).toBe(true)
      expect(modern.json.result.content[0].text).toContain("set_price failed: unlucky price")
      const infinite = await http(`${server.url}/api/products/1/set_price`, { method: "POST", body: { price: 7 } })
      expect(infinite.status).toBe(500)
      expect(infinite.json.message).toBe("set_price failed: it returned price: must be a finite number")
      const odd = await http(`${server.url}/api/products/1/restock`, { method: "POST", body: {} })
      expect(odd.status).toBe(500)
      expect(odd.json.message).toBe("restock failed: a string, not an Error")
      const after = await http(`${server.url}/api/products/1/set_price`, { method: "POST", body: { price: 2 } })
      expect(after.json).toMatchObject({ version: 2, price: 2 })
    } finally {
      await server.close()
    }
  })
})

describe("a writer that dies (a bug of ours, injected)", () => {
  it("fails the pending and every later command fast with 503, and reports its death", async () => {
    let die = false
    const faults = Layer.succeed(LogFaults, { beforeWrite: () => (die ? Effect.die(new Error("injected writer bug")) : Effect.void) })
    const server = await startServer(throwingApp, {}, faults)
    try {
      expect((await http(`${server.url}/api/products`, { method: "POST", body: { name: "a", price: 1 } })).status).toBe(201)
      die = true
      const pending = await Promise.all(
        Array.from({ length: 5 }, (_, i) => http(`${server.url}/api/products`, { method: "POST", body: { name: `p${i}`, price: 1 } }))
      )
      expect(pending.map((r) => r.status)).toEqual([503, 503, 503, 503, 503])
      expect(pending[0].json.message).toMatch(/writer stopped after an internal error \(injected writer bug\)/)
      const later = await http(`${server.url}/api/products/1/set_price`, { method: "POST", body: { price: 3 } })
      expect(later.status).toBe(503)
      const reason = await server.runtime.runPromise(Effect.flatMap(GroupCommit, (w) => w.died))
      expect(reason).toBe("injected writer bug")
      // Reads go on from the projection.
      expect((await http(`${server.url}/api/products/1`)).json).toMatchObject({ id: "1", price: 1 })
    } finally {
      await server.close()
    }
  })
})

describe("a writer that dies in a real process", () => {
  it("answers the caller, and the process exits 1 for its supervisor", async () => {
    const server = await spawnNode(path.join(ROOT, "testkit/dying-writer.ts"), [tempDir("wo-dying-")], { importTsx: true, ready: WO_READY })
    try {
      const answer = await fetch(`${server.url}/api/products`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "a", price: 1, currency: "USD" })
      }).then((r) => r.status, () => "connection closed")
      // The caller is failed before the process exits; the exit may win the race to the socket, never a hang.
      expect([503, "connection closed"]).toContain(answer)
      expect(await server.stop("SIGCONT")).toBe(1) // already exiting by itself: the signal changes nothing
      expect(server.output()).toMatch(/wo: the group-commit writer died \(injected writer bug\); exiting/)
    } finally {
      await server.stop("SIGKILL")
    }
  })
})

