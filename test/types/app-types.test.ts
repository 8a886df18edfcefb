/**
 * The app's own types reach the places that used to take any name or any row: a view's `on` and `evolve`, a
 * `ref`'s target, a decider spec's `invoke`, and a method's literal result. The checks are compile-time:
 * `npm run typecheck` (tsc over test/) fails on an unused `@ts-expect-error` (a hole that compiles again) and on a
 * wrong `expectTypeOf`. The runtime part makes sure the declarations load and behave as before.
 */
import { Either, Schema } from "effect"
import { describe, expect, expectTypeOf, it } from "vitest"
import { defineApp, entity, reject, view } from "../../src/domain/catalog.ts"
import { ref } from "../../src/domain/rules/refs.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { created, DeciderSpecification, invoke, invoked } from "../../src/testing/decider-spec.ts"

// A ticket desk: tickets are assigned to agents, closed, and escalated (an app command).
const agents = entity({ fields: { name: Schema.String } })
const tickets = entity({
  fields: {
    title: Schema.String,
    status: Schema.Literal("open", "closed"),
    assignee: Schema.NullOr(ref("agents"))
  },
  methods: {
    assign: { params: { agent: ref("agents") }, apply: (_ticket, { agent }) => ({ assignee: agent }) },
    // A literal result needs no `as const`: not from a method without parameters...
    close: { params: {}, apply: () => ({ status: "closed" }) },
    // ...nor beside a refusal.
    reopen: { params: {}, apply: (ticket) => (ticket.status === "open" ? reject("already_open", "the ticket is open") : { status: "open" }) }
  }
})

const desk = defineApp({
  name: "desk",
  entities: { tickets, agents },
  commands: {
    escalate: {
      params: { ticket: ref("tickets"), agent: ref("agents") },
      decide: (ctx, { ticket, agent }) => [
        ctx.invoke("tickets", ticket, "assign", { agent }),
        // @ts-expect-error: assign needs its agent
        ctx.invoke("tickets", ticket, "assign")
      ]
    }
  },
  views: (view) => ({
    open_by_agent: view({
      schema: Schema.Record({ key: Schema.String, value: Schema.Int }),
      initial: {},
      on: { tickets: ["created", "assign", "close", "reopen", "deleted"] },
      evolve: (counts, { event, before, after }) => {
        expectTypeOf(event.type).toEqualTypeOf<"tickets">()
        expectTypeOf(after?.status).toEqualTypeOf<"open" | "closed" | undefined>()
        expectTypeOf(before?.assignee).toEqualTypeOf<string | null | undefined>()
        // @ts-expect-error: no field "titel"
        void after?.titel
        const next = { ...counts }
        if (before?.status === "open" && before.assignee !== null) next[before.assignee] = (next[before.assignee] ?? 0) - 1
        if (after?.status === "open" && after.assignee !== null) next[after.assignee] = (next[after.assignee] ?? 0) + 1
        return next
      }
    }),
    open_per_agent: view({
      schema: Schema.Struct({ open: Schema.Int }),
      initial: { open: 0 },
      on: { tickets: ["created", "assign", "close", "reopen", "deleted"] },
      key: ({ after, before }) => {
        expectTypeOf(after?.assignee).toEqualTypeOf<string | null | undefined>()
        return (after ?? before)?.assignee ?? undefined
      },
      evolve: (entry, { after }) => {
        expectTypeOf(entry).toEqualTypeOf<{ readonly open: number }>()
        // @ts-expect-error: an entry has no field "closed"
        void entry.closed
        return after === null ? undefined : { open: entry.open + (after.status === "open" ? 1 : 0) }
      }
    }),
    both: view({
      schema: Schema.Int,
      initial: 0,
      on: { tickets: ["created"], agents: ["created"] },
      evolve: (n, { after }) => {
        // A change of either type: the fields they share, or narrow first.
        expectTypeOf(after?.id).toEqualTypeOf<string | undefined>()
        // @ts-expect-error: an agent has no title
        void after?.title
        return after !== null && "name" in after ? n + 1 : n
      }
    })
  })
})

// `on` names the app's types, and for each its event kinds and method names.
export const wrongViews = defineApp({
  name: "desk",
  entities: { tickets, agents },
  views: (view) => ({
    wrong_type: view({
      schema: Schema.Int,
      initial: 0,
      // @ts-expect-error: no type "tt"
      on: { tt: ["created"] },
      evolve: (n) => n
    }),
    wrong_kind: view({
      schema: Schema.Int,
      initial: 0,
      // @ts-expect-error: no event kind or method "creatd"
      on: { tickets: ["creatd"] },
      evolve: (n) => n
    })
  })
})

// The object form, `views: { ... }`, checks `on` too (its rows are untyped: see docs/app-authors.md).
export const wrongViewsObjectForm = defineApp({
  name: "desk",
  entities: { tickets, agents },
  views: {
    right: view({ schema: Schema.Int, initial: 0, on: { tickets: ["created", "assign"] }, evolve: (n) => n }),
    // @ts-expect-error: no type "tt"
    wrong_type: view({ schema: Schema.Int, initial: 0, on: { tt: ["created"] }, evolve: (n) => n }),
    // @ts-expect-error: no event kind or method "creatd"
    wrong_kind: view({ schema: Schema.Int, initial: 0, on: { tickets: ["creatd"] }, evolve: (n) => n })
  }
})

// A reference to a type the app does not have, in a field, a method's params or a command's params.
const misfiled = entity({ fields: { owner: ref("agentz") } })
const misassigned = entity({
  fields: { title: Schema.String },
  methods: { assign: { params: { agent: Schema.NullOr(ref("agentz")) }, apply: () => ({}) } }
})
export const wrongRefs = [
  defineApp({
    name: "fields",
    // @ts-expect-error: ref("agentz") names no entity type of this app
    entities: { misfiled, agents }
  }),
  defineApp({
    name: "params",
    // @ts-expect-error: the same in a method's params
    entities: { misassigned, agents }
  }),
  defineApp({
    name: "commands",
    entities: { agents },
    commands: {
      // @ts-expect-error: the same in a command's params
      touch: { params: { agent: ref("agentz") }, decide: () => [] }
    }
  }),
  // The same names, right, compile.
  defineApp({ name: "right", entities: { misfiled: entity({ fields: { owner: ref("agents").pipe(Schema.optional) } }), agents } })
]

describe("the app's types close the holes", () => {
  it("a method's literal result is inferred as the literal", () => {
    // (The methods above compile: `{ status: "closed" }` was a string there before.)
    expect(tickets.methods.close.apply({ id: "1", version: 1, title: "t", status: "open", assignee: null }, {})).toEqual({ status: "closed" })
  })

  it("views written as a function of `view` are a plain record at run time, and the app compiles", () => {
    expect(Object.keys(desk.views ?? {})).toEqual(["open_by_agent", "open_per_agent", "both"])
    expect(Either.isRight(compileApp(desk))).toBe(true)
    // A wrong name still fails at load too, for apps that are not type-checked.
    expect(Either.isLeft(compileApp(wrongViews))).toBe(true)
    // The standalone `view` still takes any names (a view declared for no app in particular).
    expect(view({ schema: Schema.Int, initial: 0, on: { anything: ["x"] }, evolve: (n) => n }).on).toEqual({ anything: ["x"] })
  })

  it("a decider spec's invoke needs the method's required params", () => {
    const given = DeciderSpecification.for(desk, "tickets")([created({ title: "Printer", status: "open", assignee: null })])
    given.when(invoke("assign", { agent: "7" })).then([invoked("assign", { assignee: "7" }, { agent: "7" })])
    given.when(invoke("close")).then([invoked("close", { status: "closed" })])
    // @ts-expect-error: assign needs its agent (at run time the decode refuses it)
    given.when(invoke("assign")).thenFails("ValidationFailed", /agent/)
  })
})
