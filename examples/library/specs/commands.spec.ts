/**
 * Decider specs for the lend and return commands: given rows of several types, when the command arrives with its
 * params, then the events it decides on each row, or its refusal. A loan the command creates takes the next id of
 * its type after the given ones.
 */
import { created, DeciderSpecification, type EventOf, invoked, spec } from "writeonce/testing"
import app from "../app.ts"

type BookEvent = EventOf<typeof app, "books">

const dune: BookEvent = created({ title: "Dune", author: "Frank Herbert", copies: 0, available: 0 })
const oneCopy: ReadonlyArray<BookEvent> = [dune, invoked("add_copies", { copies: 1, available: 1 })]
const lentOut: ReadonlyArray<BookEvent> = [...oneCopy, invoked("check_out", { available: 0 })]
const ann: EventOf<typeof app, "members"> = created({ name: "Ann" })

const lend = DeciderSpecification.forCommand(app, "lend")
const giveBack = DeciderSpecification.forCommand(app, "return")

spec("lending takes a copy off the shelf and opens a loan, in one command", () =>
  lend({ books: { "1": oneCopy }, members: { "1": ann } })
    .when({ book: "1", member: "1" })
    .then({
      books: { "1": invoked("check_out", { available: 0 }) },
      loans: { "1": created({ book: "1", member: "1", status: "out" }) }
    }))

spec("a loan opened after others takes the next id", () =>
  lend({ books: { "1": oneCopy }, members: { "1": ann }, loans: { "7": created({ book: "1", member: "1", status: "returned" }) } })
    .when({ book: "1", member: "1" })
    .then({
      books: { "1": invoked("check_out", { available: 0 }) },
      loans: { "8": created({ book: "1", member: "1", status: "out" }) }
    }))

spec("a book with no copy on the shelf is not lent, and no loan opens", () =>
  lend({ books: { "1": lentOut }, members: { "1": ann } })
    .when({ book: "1", member: "1" })
    .thenRejects("no_copies", "Dune"))

spec("a book is lent only to a member who exists: the loan's reference is checked", () =>
  lend({ books: { "1": oneCopy }, members: { "1": ann } })
    .when({ book: "1", member: "2" })
    .thenRejects("missing_reference", "members 2 does not exist"))

spec("a book that does not exist is not lent: the book param is a reference", () =>
  lend({ members: { "1": ann } })
    .when({ book: "9", member: "1" })
    .thenRejects("missing_reference", "books 9 does not exist"))

spec("returning closes the loan and puts the copy back", () =>
  giveBack({ books: { "1": lentOut }, members: { "1": ann }, loans: { "1": created({ book: "1", member: "1", status: "out" }) } })
    .when({ loan: "1" })
    .then({
      loans: { "1": invoked("close", { status: "returned" }) },
      books: { "1": invoked("check_in", { available: 1 }) }
    }))

spec("a loan is returned once", () =>
  giveBack({
    books: { "1": oneCopy },
    loans: { "1": [created({ book: "1", member: "1", status: "out" }), invoked("close", { status: "returned" })] }
  })
    .when({ loan: "1" })
    .thenRejects("already_returned"))

spec("a loan that does not exist cannot be returned", () =>
  giveBack({})
    .when({ loan: "3" })
    .thenRejects("missing_reference", "loans 3"))
