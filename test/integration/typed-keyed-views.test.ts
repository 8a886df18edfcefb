/**
 * A keyed view through the typed in-process API (embedding/write-once.ts), on the library sample over a real
 * classic-level dir: one member's entry decoded through the view's schema (NotFound while the member has none), a
 * page of entries filtered and ordered as REST's, and a stream of one entry that hears its member's changes only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Fiber, ManagedRuntime, Stream } from "effect"
import { coreLayer, loadSettings } from "../../src/index.ts"
import { WriteOnce, type WriteOnceApi } from "../../src/embedding/write-once.ts"
import library from "../../examples/library/app.ts"
import { tempDir } from "../../testkit/server.ts"

const settings = await Effect.runPromise(loadSettings({ dataDir: tempDir("wo-typed-keyed-") }))
const runtime = ManagedRuntime.make(coreLayer(library, settings))
let wo: WriteOnceApi<typeof library>
const run = <A, E>(effect: Effect.Effect<A, E>) => runtime.runPromise(effect)
const failure = <A, E>(effect: Effect.Effect<A, E>) => run(Effect.flip(effect))

beforeAll(async () => {
  wo = await runtime.runPromise(WriteOnce.of(library))
})
afterAll(() => runtime.dispose())

const waitFor = async (done: () => boolean) => {
  for (let i = 0; i < 2000 && !done(); i++) await new Promise((r) => setTimeout(r, 5))
  expect(done()).toBe(true)
}

describe("a keyed view through the typed in-process API", () => {
  it("reads one entry, pages, and streams one key's changes only", async () => {
    const book = await run(wo.create("books", { title: "Dune", author: "Herbert" }))
    await run(wo.invoke("books", book.id, "add_copies", { n: 5 }))
    const ann = await run(wo.create("members", { name: "Ann" }))
    const bob = await run(wo.create("members", { name: "Bob" }))
    expect(await failure(wo.viewEntry("loans_by_member", ann.id))).toMatchObject({ _tag: "NotFound" })
    expect(await failure(wo.viewEntry("nope" as never, ann.id))).toMatchObject({ _tag: "NotFound" })

    const seen: Array<{ readonly out: number } | null> = []
    const fiber = runtime.runFork(Stream.runForEach(Stream.take(wo.changes.viewEntry("loans_by_member", ann.id), 3), (e) => Effect.sync(() => seen.push(e === null ? null : e.value))))
    await waitFor(() => seen.length === 1)
    await run(wo.command("lend", { book: book.id, member: ann.id }))
    await waitFor(() => seen.length === 2)
    // Bob's loans are another key: Ann's stream does not hear them.
    await run(wo.command("lend", { book: book.id, member: bob.id }))
    await run(wo.command("lend", { book: book.id, member: bob.id }))
    await run(wo.command("lend", { book: book.id, member: ann.id }))
    await run(Fiber.join(fiber))
    expect(seen.map((e) => e?.out ?? null)).toEqual([null, 1, 2])

    const entry = await run(wo.viewEntry("loans_by_member", bob.id))
    expect(entry).toMatchObject({ key: bob.id, value: { out: 2 } })
    expect(entry.value.loans).toHaveLength(2)
    const page = await run(wo.viewEntries("loans_by_member", { order: "-out", limit: 1 }))
    expect(page.items.map((e) => e.key)).toEqual([ann.id])
    expect(page.nextCursor).toBeDefined()
    const next = await run(wo.viewEntries("loans_by_member", { order: "-out", limit: 1, cursor: page.nextCursor }))
    expect(next.items.map((e) => e.key)).toEqual([bob.id])
    expect((await run(wo.viewEntries("loans_by_member", { where: { out: 2 } }))).items).toHaveLength(2)
    expect(await failure(wo.viewEntries("loans_by_member", { where: { nope: 1 } }))).toMatchObject({ _tag: "ValidationFailed" })
    // A program changing what it got changes nothing served.
    ;(entry.value.loans as Array<string>).push("x")
    expect((await run(wo.viewEntry("loans_by_member", bob.id))).value.loans).toHaveLength(2)
  })
})
