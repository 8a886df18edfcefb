/** writeonce/testing's decider specs and `wo test`'s reporters, without I/O. */
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { defineApp, entity } from "../../src/domain/catalog.ts"
import { renameField } from "../../src/domain/migrations.ts"
import {
  create,
  created,
  DeciderSpecification,
  deleted,
  type EventOf,
  invoke,
  invoked,
  remove,
  SpecFailed,
  update,
  updated
} from "../../src/testing/decider-spec.ts"
import { junitXml, tapResult, tapSummary } from "../../src/testing/reporters.ts"
import { spec, takeSpecs } from "../../src/testing/spec.ts"
import { apps } from "../../testkit/server.ts"

const given = DeciderSpecification.for(apps.pricing, "products")
const pen: EventOf<typeof apps.pricing, "products"> = created({ name: "Pen", price: 2, currency: "USD" })

const failure = (run: () => void): string => {
  try {
    run()
  } catch (e) {
    expect(e).toBeInstanceOf(SpecFailed)
    return (e as SpecFailed).message
  }
  throw new Error("expected the spec to fail")
}

describe("DeciderSpecification", () => {
  it("given events, when a method, then its event (params compared only when given)", () => {
    given([pen]).when(invoke("set_price", { price: 3 })).then([invoked("set_price", { price: 3 })])
    given(pen).when(invoke("set_price", { price: 3 })).then(invoked("set_price", { price: 3 }, { price: 3 }))
  })

  it("decodes commands through the type's schema, as REST and MCP do", () => {
    given([]).when(create({ name: "Pen", price: 2, currency: "USD" })).then([pen])
    given([]).when(create({ name: "Pen", price: -2, currency: "USD" })).thenFails("ValidationFailed", "price must be a positive number")
    given([pen]).when(update({ currency: "EUR" })).then([updated({ currency: "EUR" })])
    given([pen]).when(remove()).then([deleted()])
    // @ts-expect-error: an unknown method is a compile error too; the runtime refuses it for untyped callers
    given([pen]).when(invoke("no_such_method")).thenFails("ValidationFailed", /no method/)
  })

  it("refuses commands on a missing row and stale versions", () => {
    given([]).when(invoke("set_price", { price: 3 })).thenFails("NotFound")
    given([pen, invoked("set_price", { price: 3 })]).when(update({ price: 4 }, 1)).thenFails("VersionConflict", "at version 2")
  })

  it("says how the events differ, with a diff", () => {
    const message = failure(() => given([pen]).when(invoke("set_price", { price: 3 })).then([invoked("set_price", { price: 4 })]))
    expect(message).toContain("the decided events differ (- expected, + actual)")
    expect(message).toMatch(/^\s+- +"price": 4$/m)
    expect(message).toMatch(/^\s+\+ +"price": 3$/m)
  })

  it("says what happened instead of the expected events or error", () => {
    expect(failure(() => given([pen]).when(invoke("set_price", { price: -1 })).then([invoked("set_price", { price: -1 })])))
      .toContain("but the command failed: Rejected: price must be a positive number")
    expect(failure(() => given([pen]).when(invoke("set_price", { price: 3 })).thenFails("ValidationFailed")))
      .toMatch(/expected ValidationFailed, but the command decided:\n[\s\S]*"price": 3/)
    expect(failure(() => given([]).when(invoke("set_price", { price: 3 })).thenFails("ValidationFailed")))
      .toBe("expected ValidationFailed, got NotFound: products 1 not found")
  })

  it("checks the given events against the schema", () => {
    // @ts-expect-error: missing fields are a compile error too; the runtime checks for untyped callers
    expect(failure(() => given([created({ name: "Pen" })]).when(remove()).then([deleted()])))
      .toMatch(/^given event 1 \(created\) does not fit products: /)
  })

  it("names the types an app has when asked for another", () => {
    // @ts-expect-error: an unknown type is a compile error too; the runtime refuses it for untyped callers
    expect(() => DeciderSpecification.for(apps.pricing, "orders")).toThrow(`app "pricing" has no type "orders" (it has: products)`)
  })

  it("fails a method that throws with MethodFailed, as the writer does", () => {
    const app = {
      name: "t",
      entities: {
        things: {
          fields: apps.pricing.entities.products.fields,
          methods: { boom: { params: {}, apply: () => { throw new Error("kaput") } } }
        }
      }
    }
    DeciderSpecification.for(app, "things")([created({ name: "Pen", price: 2, currency: "USD" })])
      .when(invoke("boom")).thenFails("MethodFailed", "boom failed: kaput")
  })
})

describe("spec registry", () => {
  it("hands over what a spec file registered, once", () => {
    takeSpecs()
    spec("a", () => {})
    spec("b", () => {})
    expect(takeSpecs().map((s) => s.name)).toEqual(["a", "b"])
    expect(takeSpecs()).toEqual([])
  })
})

describe("reporters", () => {
  const report = {
    app: "shop",
    dir: "/x",
    results: [
      { suite: "specs", file: "a.spec.ts", name: "a.spec.ts > works", ok: true, millis: 1 },
      { suite: "transcripts", file: "t.http", name: "t.http #1 <x>", ok: false, failure: "status: expected 200, got 404\n  more", millis: 20 }
    ]
  }

  it("writes TAP 13: ok lines, failures in a YAML block, the plan and counts", () => {
    expect(tapResult(report.results[0], 1)).toBe("ok 1 - a.spec.ts > works")
    expect(tapResult(report.results[1], 2)).toBe(
      "not ok 2 - t.http \\#1 <x>\n  ---\n  message: |-\n    status: expected 200, got 404\n      more\n  ..."
    )
    expect(tapSummary(report)).toBe("1..2\n# pass 1\n# fail 1")
  })

  it("writes JUnit XML, escaped", () => {
    const xml = junitXml(report)
    expect(xml).toContain(`<testsuites name="wo test shop" tests="2" failures="1" time="0.021">`)
    expect(xml).toContain(`<testcase classname="a.spec.ts" name="a.spec.ts &gt; works" time="0.001"/>`)
    expect(xml).toContain(`<failure message="status: expected 200, got 404">status: expected 200, got 404\n  more</failure>`)
    expect(xml).toContain(`name="t.http #1 &lt;x&gt;"`)
  })
})

describe("given events written at an older schema version", () => {
  // Version 1 stored `name`; version 2 calls it `title`.
  const shelf = defineApp({
    name: "shelf",
    entities: {
      books: entity({
        fields: { title: Schema.String, copies: Schema.Int },
        methods: { add_copy: { params: {}, apply: (book) => ({ copies: book.copies + 1 }) } },
        version: 2,
        migrations: { 2: renameField("name", "title") }
      })
    }
  })
  const books = DeciderSpecification.for(shelf, "books")

  it("go through the type's migrations, so a migration is testable with a spec", () => {
    books([created({ name: "Dune", copies: 1 }, { schema: 1 }), updated({ name: "Dune Messiah" }, { schema: 1 })])
      .when(update({ copies: 3 }))
      .then(updated({ copies: 3 }))
    // The upcast row is what the method sees: a title, no name.
    books([created({ name: "Dune", copies: 1 }, { schema: 1 })]).when(invoke("add_copy")).then(invoked("add_copy", { copies: 2 }))
    // Without `schema`, an event is in the current version: the old field does not fit.
    expect(failure(() => books([created({ name: "Dune", copies: 1 } as never)]).when(remove()).then(deleted())))
      .toMatch(/^given event 1 \(created\) does not fit books: /)
  })

  it("name a schema version the type does not have", () => {
    expect(failure(() => books([created({ title: "Dune", copies: 1 }, { schema: 3 })]).when(remove()).then(deleted())))
      .toBe("given event 1 (created): schema 3 is not a version of books (1 to 2)")
  })
})
