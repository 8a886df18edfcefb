/** Decider specs for loans: a loan is closed once. (Loans are opened and closed by the lend and return commands.) */
import { created, DeciderSpecification, type EventOf, invoke, invoked, spec } from "writeonce/testing"
import app from "../app.ts"

const given = DeciderSpecification.for(app, "loans")
const lent: EventOf<typeof app, "loans"> = created({ book: "1", member: "1", status: "out" })

spec("an open loan can be closed", () =>
  given([lent])
    .when(invoke("close"))
    .then([invoked("close", { status: "returned" })]))

spec("a returned loan cannot be closed again", () =>
  given([lent, invoked("close", { status: "returned" })])
    .when(invoke("close"))
    .thenRejects("already_returned"))
