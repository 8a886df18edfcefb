/**
 * Decider specs for books: how copies come and go. No server and no I/O: `npx wo test examples/library` runs them,
 * with the transcripts.
 */
import { create, created, DeciderSpecification, type EventOf, invoke, invoked, spec, update, updated } from "writeonce/testing"
import app from "../app.ts"

const given = DeciderSpecification.for(app, "books")
type BookEvent = EventOf<typeof app, "books">

const dune: BookEvent = created({ title: "Dune", author: "Frank Herbert", copies: 0, available: 0 })
const oneOnTheShelf: ReadonlyArray<BookEvent> = [dune, invoked("add_copies", { copies: 1, available: 1 })]
const checkedOut: BookEvent = invoked("check_out", { available: 0 })

spec("a new book starts with no copies", () =>
  given([])
    .when(create({ title: "Dune", author: "Frank Herbert" }))
    .then([dune]))

spec("copies added are on the shelf", () =>
  given([dune])
    .when(invoke("add_copies", { n: 2 }))
    .then([invoked("add_copies", { copies: 2, available: 2 }, { n: 2 })]))

spec("no book has more than a million copies: an absurd number is refused before the sum overflows", () =>
  given(oneOnTheShelf)
    .when(invoke("add_copies", { n: Number.MAX_SAFE_INTEGER }))
    .thenRejects("too_many_copies", "a book has at most 1000000 copies"))

spec("a copy on the shelf can be checked out", () =>
  given(oneOnTheShelf)
    .when(invoke("check_out"))
    .then([invoked("check_out", { available: 0 })]))

spec("a book with no copy on the shelf cannot be checked out", () =>
  given([...oneOnTheShelf, checkedOut])
    .when(invoke("check_out"))
    .thenRejects("no_copies", `no copy of "Dune" is available`))

spec("a copy checked out can be checked in", () =>
  given([...oneOnTheShelf, checkedOut])
    .when(invoke("check_in"))
    .then([invoked("check_in", { available: 1 })]))

spec("a copy the library does not own cannot come back: the invariant refuses it", () =>
  given(oneOnTheShelf)
    .when(invoke("check_in"))
    .thenRejects("available_in_range"))

spec("available changes only through the methods", () =>
  given(oneOnTheShelf)
    .when(update({ available: 99 }))
    .thenRejects("guarded_field", "changed only by methods"))

spec("a book's title can be updated", () =>
  given(oneOnTheShelf)
    .when(update({ title: "Dune (40th anniversary)" }))
    .then([updated({ title: "Dune (40th anniversary)" })]))

spec("a book needs a title", () =>
  given([])
    .when(create({ title: "", author: "Frank Herbert" }))
    .thenFails("ValidationFailed"))
