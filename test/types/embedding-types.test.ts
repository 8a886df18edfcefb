/**
 * The in-process API is typed from the app: an unknown type, method, command, view or field, a missing param and a
 * param of the wrong type are compile errors. `npm run typecheck` fails on an unused `@ts-expect-error`; the
 * calls are only type-checked (the function that makes them never runs).
 */
import { describe, expectTypeOf, it } from "vitest"
import type { Effect, Stream } from "effect"
import type { AppDef } from "../../src/domain/catalog.ts"
import type { WriteOnceApi } from "../../src/embedding/write-once.ts"
import type { PageOf, RowOf, ViewValue } from "../../src/embedding/app-types.ts"
import desk from "../../examples/embedded/app.ts"

type Desk = WriteOnceApi<typeof desk>

/** Never called: only compiled. */
export const calls = (wo: Desk) => {
  wo.invoke("tickets", "1", "assign", { agent: "2" })
  wo.invoke("tickets", "1", "close")
  wo.invoke("tickets", "1", "close", {}, { expectedVersion: 3 })
  wo.command("escalate", { ticket: "1", agent: "2" })
  wo.create("tickets", { title: "Printer on fire" })
  wo.list("tickets", { where: { status: "open" }, order: "-id", limit: 20 })

  // @ts-expect-error: assign's param is "agent"
  wo.invoke("tickets", "1", "assign", { agnet: "2" })
  // @ts-expect-error: an agent is named by its id, a string
  wo.invoke("tickets", "1", "assign", { agent: 2 })
  // @ts-expect-error: assign needs its param
  wo.invoke("tickets", "1", "assign")
  // @ts-expect-error: tickets have no method "asign"
  wo.invoke("tickets", "1", "asign", { agent: "2" })
  // @ts-expect-error: no type "ticket"
  wo.get("ticket", "1")
  // @ts-expect-error: escalate's params are ticket and agent
  wo.command("escalate", { ticket: "1", agnet: "2" })
  // @ts-expect-error: escalate needs its params
  wo.command("escalate")
  // @ts-expect-error: no command "escalte"
  wo.command("escalte", { ticket: "1", agent: "2" })
  // @ts-expect-error: a ticket has no field "titel"
  wo.create("tickets", { titel: "Printer on fire" })
  // @ts-expect-error: a status is "open", "assigned" or "closed"
  wo.list("tickets", { where: { status: "pending" } })
  // @ts-expect-error: tickets have no field "titel" to order by
  wo.list("tickets", { order: "-titel" })
  // @ts-expect-error: no view "tickets_by_state"
  wo.view("tickets_by_state")
}

describe("the in-process API is typed by the app", () => {
  it("gives rows, pages, views and streams their app's types", () => {
    type Ticket = RowOf<typeof desk, "tickets">
    expectTypeOf<Ticket["status"]>().toEqualTypeOf<"open" | "assigned" | "closed" | undefined>()
    expectTypeOf<Ticket["id"]>().toEqualTypeOf<string>()
    expectTypeOf<ReturnType<Desk["get"]>>().not.toBeAny()
    expectTypeOf<ViewValue<typeof desk, "tickets_by_status">>().toEqualTypeOf<{ readonly open: number; readonly assigned: number; readonly closed: number }>()
    expectTypeOf<Effect.Effect.Success<ReturnType<Desk["list"]>>>().toMatchTypeOf<PageOf<unknown>>()
    expectTypeOf<Stream.Stream.Success<ReturnType<Desk["changes"]["row"]>>>().not.toBeAny()
  })

  it("an app typed as AppDef (erased) takes any name, as before", () => {
    type Erased = WriteOnceApi<AppDef>
    expectTypeOf<Parameters<Erased["get"]>[0]>().toEqualTypeOf<string>()
    expectTypeOf<Parameters<Erased["view"]>[0]>().toEqualTypeOf<string>()
  })
})
