/**
 * The typed in-process API (embedding/write-once.ts) over a real runtime on a temp classic-level dir: the app's
 * own writes, reads, views, change streams and log, with the refusals the server gives, as the same tagged errors.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Cause, Chunk, Effect, Exit, Fiber, ManagedRuntime, Stream } from "effect"
import { coreLayer, loadSettings } from "../../src/index.ts"
import { WriteOnce, type WriteOnceApi } from "../../src/embedding/write-once.ts"
import desk from "../../examples/embedded/app.ts"
import pricing from "../../examples/pricing/app.ts"
import { tempDir } from "../../testkit/server.ts"

const settings = await Effect.runPromise(loadSettings({ dataDir: tempDir("wo-typed-") }))
const runtime = ManagedRuntime.make(coreLayer(desk, settings))
let wo: WriteOnceApi<typeof desk>
const run = <A, E>(effect: Effect.Effect<A, E>) => runtime.runPromise(effect)
const failure = <A, E>(effect: Effect.Effect<A, E>) => run(Effect.flip(effect))

beforeAll(async () => {
  wo = await runtime.runPromise(WriteOnce.of(desk))
})
afterAll(() => runtime.dispose())

describe("the typed in-process API", () => {
  it("creates, calls methods and runs app commands, recording the in-process actor", async () => {
    const ann = await run(wo.create("agents", { name: "Ann" }))
    expect(ann).toMatchObject({ id: "1", version: 1, name: "Ann", escalations: 0 })
    const ticket = await run(wo.create("tickets", { title: "Printer on fire" }))
    expect(ticket).toMatchObject({ id: "1", status: "open", priority: "normal" })
    const assigned = await run(wo.invoke("tickets", ticket.id, "assign", { agent: ann.id }))
    expect(assigned).toMatchObject({ version: 2, status: "assigned", assignee: "1" })
    const escalated = await run(wo.command("escalate", { ticket: ticket.id, agent: ann.id }))
    expect(escalated.changes.map((c) => [c.event.type, c.event.method, c.row?.version])).toEqual([["tickets", "escalate_to", 3], ["agents", "take_escalation", 2]])
    expect(await run(wo.get("agents", ann.id))).toMatchObject({ escalations: 1 })
    const events = await run(Stream.runCollect(wo.events(1)).pipe(Effect.map(Chunk.toReadonlyArray)))
    expect(events.map((e) => e.actor)).toEqual(events.map(() => ({ client: "in-process" })))
    const bob = await run(wo.as({ name: "desk-bot" }).create("agents", { name: "Bob" }))
    const [last] = await run(Stream.runCollect(wo.events(events.length + 1)).pipe(Effect.map(Chunk.toReadonlyArray)))
    expect(last).toMatchObject({ type: "agents", id: bob.id, actor: { principal: "desk-bot", client: "in-process" } })
  })

  it("refuses as the server does, with the same tagged errors and codes", async () => {
    const ticket = await run(wo.create("tickets", { title: "Screen flickers" }))
    expect(await failure(wo.invoke("tickets", "999", "close"))).toMatchObject({ _tag: "NotFound", type: "tickets", id: "999" })
    expect(await failure(wo.invoke("tickets", ticket.id, "close", {}, { expectedVersion: 7 }))).toMatchObject({ _tag: "VersionConflict", expected: 7, actual: 1 })
    // An escalation to an agent that does not exist: the writer's reference check, as over REST (422).
    expect(await failure(wo.command("escalate", { ticket: ticket.id, agent: "404" }))).toMatchObject({ _tag: "Rejected", code: "missing_reference" })
    await run(wo.invoke("tickets", ticket.id, "close"))
    expect(await failure(wo.invoke("tickets", ticket.id, "close"))).toMatchObject({ _tag: "Rejected", code: "already_closed" })
    expect(await failure(wo.update("tickets", ticket.id, { status: "open" }))).toMatchObject({ _tag: "Rejected", code: "guarded_field" })
    expect(await failure(wo.create("tickets", { title: "" }))).toMatchObject({ _tag: "ValidationFailed", type: "tickets" })
    expect(await failure(wo.list("tickets", { where: { titel: "x" } as never }))).toMatchObject({ _tag: "ValidationFailed" })
  })

  it("refuses to type another app than the one the runtime serves", async () => {
    const exit = await runtime.runPromiseExit(WriteOnce.of(pricing))
    expect(Exit.isFailure(exit) && Cause.pretty(exit.cause)).toContain(`serves the app "ticket-desk", not "pricing"`)
  })

  it("lists with the where, order, limit and cursor REST and MCP take", async () => {
    for (const title of ["a", "b", "c"]) await run(wo.create("tickets", { title }))
    const first = await run(wo.list("tickets", { where: { status: "open" }, order: "-id", limit: 2 }))
    expect(first.items.map((t) => t.title)).toEqual(["c", "b"])
    expect(first.nextCursor).toBeTypeOf("string")
    const second = await run(wo.list("tickets", { where: { status: "open" }, order: "-id", limit: 2, cursor: first.nextCursor }))
    expect(second.items.map((t) => t.title)).toEqual(["a"])
    expect(second.nextCursor).toBeUndefined()
  })

  it("reads a view decoded through its schema", async () => {
    const counts = await run(wo.view("tickets_by_status"))
    expect(counts).toEqual({ open: 3, assigned: 1, closed: 1 })
    expect(await failure(wo.view("nope" as never))).toMatchObject({ _tag: "NotFound" })
  })

  it("streams a row, a live query and a view: the state now, then after each change", async () => {
    const ticket = await run(wo.create("tickets", { title: "Coffee machine" }))
    const collect = <A, E>(stream: Stream.Stream<A, E>, n: number) => {
      const seen: Array<A> = []
      const fiber = runtime.runFork(Stream.runForEach(Stream.take(stream, n), (a) => Effect.sync(() => seen.push(a))))
      return { seen, fiber }
    }
    const row = collect(wo.changes.row("tickets", ticket.id), 3)
    const open = collect(wo.changes.list("tickets", { where: { status: "open" } }), 2)
    const view = collect(wo.changes.view("tickets_by_status"), 2)
    // Each stream reads its first state once it has subscribed: the writes below come after.
    await waitFor(() => row.seen.length === 1 && open.seen.length === 1 && view.seen.length === 1)
    await run(wo.invoke("tickets", ticket.id, "assign", { agent: "1" }))
    await waitFor(() => row.seen.length === 2)
    await run(wo.invoke("tickets", ticket.id, "close"))
    await run(Fiber.join(row.fiber))
    await run(Fiber.join(open.fiber))
    await run(Fiber.join(view.fiber))
    expect(row.seen.map((r) => r?.status)).toEqual(["open", "assigned", "closed"])
    expect(open.seen[0].items.some((t) => t.id === ticket.id)).toBe(true)
    expect(open.seen[1].items.some((t) => t.id === ticket.id)).toBe(false)
    expect(view.seen[0].value.open - view.seen[1].value.open).toBe(1)
    expect(view.seen[1].seq).toBeGreaterThan(view.seen[0].seq)
  })

  // Last: it writes rows the earlier cases count.
  it("hands the program values of its own: changing them changes nothing served or stored", async () => {
    const carl = await run(wo.create("agents", { name: "Carl" })) as any
    carl.name = "changed after create"
    const got = await run(wo.get("agents", carl.id)) as any
    expect(got.name).toBe("Carl")
    got.name = "changed after get"
    const page = await run(wo.list("agents", { limit: 100 })) as any
    expect(page.items.find((a: any) => a.id === carl.id).name).toBe("Carl")
    for (const item of page.items) item.name = "changed in a page"
    const ticket = await run(wo.create("tickets", { title: "Mutable" }))
    const done = await run(wo.command("escalate", { ticket: ticket.id, agent: carl.id })) as any
    for (const change of done.changes) change.row.version = 999
    // The rows as the runtime serves them: every change above was made to copies.
    expect(await run(wo.get("agents", carl.id))).toMatchObject({ name: "Carl", version: 2 })
    expect(await run(wo.get("tickets", ticket.id))).toMatchObject({ title: "Mutable", version: 2 })
    const again = await run(wo.list("agents", { limit: 100 }))
    expect(again.items.map((a) => a.name)).not.toContain("changed in a page")
  })

})

const waitFor = async (check: () => boolean) => {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((r) => setTimeout(r, 10))
  expect(check()).toBe(true)
}
