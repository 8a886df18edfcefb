/**
 * Specs are the server: random commands of the library sample (every operation exposed) go to a real server, and
 * each is also decided by a decider spec (an entity's operation) or a command spec (lend, return) given every
 * event the server had logged before it. Whatever the server answered (its events, a refusal's code and message,
 * NotFound, ValidationFailed), the spec must decide the same, or the test names the command and both outcomes.
 * The commands are drawn to reach every kind of outcome: missing and mis-spelled ids, guarded fields, invariants,
 * references, bad params.
 */
import { Chunk, Effect, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import sample from "../../examples/library/app.ts"
import type { AppDef } from "../../src/domain/catalog.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { EventLog } from "../../src/log/event-log.ts"
import { DeciderSpecification } from "../../src/testing/decider-spec.ts"
import { http, startServer } from "../../testkit/server.ts"
import { prng } from "../../testkit/write-traffic.ts"

/** The sample with every operation of every type exposed (no `rest` / `mcp` lists), so every operation is drawn. */
const everything = (e: object) => Object.fromEntries(Object.entries(e).filter(([k]) => k !== "rest" && k !== "mcp"))
const app = {
  ...sample,
  entities: Object.fromEntries(Object.entries(sample.entities).map(([name, e]) => [name, everything(e)]))
} as unknown as AppDef

let server: Awaited<ReturnType<typeof startServer>>
beforeAll(async () => {
  server = await startServer(app)
})
afterAll(() => server?.close())

const logged = () =>
  server.runtime.runPromise(Effect.flatMap(EventLog, (log) => Stream.runCollect(log.readFrom(1)))).then((c) => Chunk.toReadonlyArray(c) as ReadonlyArray<StoredEvent>)

/** A stored event as a spec writes it. */
const specEvent = (e: StoredEvent) => ({
  kind: e.kind,
  data: e.data,
  ...(e.method === undefined ? {} : { method: e.method }),
  ...(e.params === undefined ? {} : { params: e.params })
})

type Draw =
  | { readonly _tag: "Entity"; readonly type: string; readonly id?: string; readonly command: Record<string, unknown>; readonly request: { method: string; path: string; body?: unknown } }
  | { readonly _tag: "Command"; readonly name: string; readonly params: Record<string, unknown> }

describe("decider and command specs decide as the server does", () => {
  it("for 150 random commands of the library sample, every outcome the same", async () => {
    const { int, pick } = prng(46)
    /**
     * A row's id in a path: one that may exist, or a missing one. (Another spelling of an id in a path is answered
     * as no row at the edge, before anything is decided: test/integration/canonical-ids.test.ts.)
     */
    const anId = () => pick(["1", "2", "3", "4", "5", "6", "9", "42"])
    /** An id in a command's params, which the command itself decides on: sometimes another spelling of one. */
    const aParam = () => pick(["1", "2", "3", "4", "5", "6", "9", "42", "01", "+2", "0"])
    const draw = (): Draw => {
      switch (int(11)) {
        case 0: {
          const body = { title: pick(["Dune", ""]), author: "F" }
          return { _tag: "Entity", type: "books", command: { _tag: "Create", input: body }, request: { method: "POST", path: "/api/books", body } }
        }
        case 1: {
          const body = pick([{ title: "T", author: "A", copies: 2 }, { title: "T", author: "A" }])
          return { _tag: "Entity", type: "books", command: { _tag: "Create", input: body }, request: { method: "POST", path: "/api/books", body } }
        }
        case 2: {
          const body = { name: pick(["Ann", "Bo", ""]) }
          return { _tag: "Entity", type: "members", command: { _tag: "Create", input: body }, request: { method: "POST", path: "/api/members", body } }
        }
        case 3:
        case 4: {
          const id = anId()
          const body = { n: pick([1, 2, 0, -1, 1_000_001]) }
          return { _tag: "Entity", type: "books", id, command: { _tag: "Invoke", method: "add_copies", input: body }, request: { method: "POST", path: `/api/books/${encodeURIComponent(id)}/add_copies`, body } }
        }
        case 5: {
          const id = anId()
          const body = pick([{ available: 3 }, { title: "Renamed" }, { copies: 0 }, {}])
          return { _tag: "Entity", type: "books", id, command: { _tag: "Update", input: body }, request: { method: "PATCH", path: `/api/books/${encodeURIComponent(id)}`, body } }
        }
        case 6: {
          const id = anId()
          const body = { book: aParam(), member: aParam() }
          return { _tag: "Entity", type: "loans", id, command: { _tag: "Update", input: body }, request: { method: "PATCH", path: `/api/loans/${encodeURIComponent(id)}`, body } }
        }
        case 7: {
          const id = anId()
          return { _tag: "Entity", type: "loans", id, command: { _tag: "Invoke", method: "close", input: {} }, request: { method: "POST", path: `/api/loans/${encodeURIComponent(id)}/close`, body: {} } }
        }
        case 8:
        case 9:
          return { _tag: "Command", name: "lend", params: { book: aParam(), member: aParam() } }
        default:
          return { _tag: "Command", name: "return", params: { loan: aParam() } }
      }
    }
    // Each spec factory compiles the app once: made once per type and command, not per draw.
    const entitySpecs = new Map<string, any>()
    const commandSpecs = new Map<string, any>()
    const specsOf = (type: string) => entitySpecs.get(type) ?? entitySpecs.set(type, DeciderSpecification.for(app, type as never)).get(type)
    const commandSpecsOf = (name: string) => commandSpecs.get(name) ?? commandSpecs.set(name, DeciderSpecification.forCommand(app, name as never)).get(name)
    const outcomes = new Map<string, number>()
    for (let i = 0; i < 150; i++) {
      const d = draw()
      const before = await logged()
      const answer = d._tag === "Entity"
        ? await http(`${server.url}${d.request.path}`, { method: d.request.method, body: d.request.body })
        : await http(`${server.url}/api/_commands/${d.name}`, { method: "POST", body: d.params })
      const written = (await logged()).slice(before.length)
      const label = `#${i} ${JSON.stringify(d._tag === "Entity" ? d.request : { command: d.name, params: d.params })} answered ${answer.status} ${answer.text}`
      const outcome = answer.status < 300 ? "written" : `${answer.json.error}${answer.json.code === undefined ? "" : `:${answer.json.code}`}`
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
      // The spec, given every event logged before, row by row.
      const given = (type: string, id: string) => before.filter((e) => e.type === type && e.id === id).map(specEvent)
      const spec = d._tag === "Entity"
        ? specsOf(d.type)(d.id === undefined ? [] : given(d.type, d.id)).when(d.command)
        : commandSpecsOf(d.name)(rowsOf(before)).when(d.params)
      try {
        if (answer.status < 300) {
          if (d._tag === "Entity") spec.then(written.map(specEvent))
          else spec.then(groupRows(written))
        } else if (answer.json.error === "Rejected") spec.thenRejects(answer.json.code, answer.json.message)
        else spec.thenFails(answer.json.error)
      } catch (e) {
        throw new Error(`${label}\nthe spec decided otherwise: ${(e as Error).message}`)
      }
    }
    // The draws reached every kind of outcome (else the comparison proves less than it says).
    console.log(`specs and server agreed on ${[...outcomes].map(([k, n]) => `${n} ${k}`).join(", ")}`)
    for (const kind of ["written", "ValidationFailed", "NotFound", "Rejected:guarded_field", "Rejected:missing_reference", "Rejected:no_copies"]) {
      expect(outcomes.get(kind) ?? 0, kind).toBeGreaterThan(0)
    }
  }, 120_000)
})

/** Every row's events, by type then id, as a command spec is given them. */
const rowsOf = (events: ReadonlyArray<StoredEvent>) => {
  const rows: Record<string, Record<string, Array<ReturnType<typeof specEvent>>>> = {}
  for (const e of events) ((rows[e.type] ??= {})[e.id] ??= []).push(specEvent(e))
  return rows
}

/** A command's written events, by type then id. */
const groupRows = rowsOf
