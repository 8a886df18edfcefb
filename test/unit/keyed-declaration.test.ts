/**
 * A keyed view's declaration, compiled: `key` must be a function; the compiled view is keyed, its filterable entry
 * fields are the schema's scalar ones, and its digest differs from the same view without a key; a key that is not
 * one (empty, too long, a control character, not a string) is refused by name; a keyed view's list tool that another
 * view or a type makes too is refused; the stored entry text round-trips.
 */
import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { defineApp, entity, MAX_VIEW_KEY_LENGTH, view } from "../../src/domain/catalog.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { viewKeyProblem } from "../../src/domain/compile-views.ts"
import { viewDefinition } from "../../src/log/view-record.ts"
import { parseViewEntry, viewEntryJson } from "../../src/log/view-entry-record.ts"
import { viewEntryUri } from "../../src/domain/uri.ts"

const items = entity({ fields: { owner: Schema.String } })
const Entry = Schema.Struct({ n: Schema.Int, label: Schema.optional(Schema.String), tags: Schema.Array(Schema.String) })
const app = (key?: unknown) => defineApp({
  name: "x",
  entities: { items },
  views: {
    per_owner: view({
      schema: Entry,
      initial: { n: 0, tags: [] },
      on: { items: ["created"] },
      ...(key === undefined ? {} : { key: key as (c: unknown) => string }),
      evolve: (e: { n: number; tags: ReadonlyArray<string> }) => ({ ...e, n: e.n + 1 })
    } as never)
  }
})

describe("keyed view declarations", () => {
  it("compile keyed, with the entry's filterable fields and a digest of their own", () => {
    const keyed = Either.getOrThrow(compileApp(app(() => "k"))).views.get("per_owner")!
    const whole = Either.getOrThrow(compileApp(app())).views.get("per_owner")!
    expect([keyed.keyed, whole.keyed]).toEqual([true, false])
    expect([...keyed.filterable.keys()]).toEqual(["n", "label"])
    expect(whole.filterable.size).toBe(0)
    expect(viewDefinition(keyed)).not.toBe(viewDefinition(whole))
  })

  it("refuse a key that is not a function", () => {
    const compiled = compileApp(app("owner"))
    expect(Either.isLeft(compiled) && compiled.left.problems).toEqual([expect.stringMatching(/view "per_owner": key must be a function/)])
  })

  it("refuse a keyed view whose list tool another view or a type makes too", () => {
    const declaration = (key?: () => string) => view({
      schema: Entry,
      initial: { n: 0, tags: [] },
      on: { items: ["created"] },
      ...(key === undefined ? {} : { key }),
      evolve: (e: { n: number; tags: ReadonlyArray<string> }) => e
    } as never)
    const twoViews = compileApp(defineApp({ name: "x", entities: { items }, views: { a: declaration(() => "k"), a_list: declaration() } }))
    expect(Either.isLeft(twoViews) && twoViews.left.problems).toEqual([`views "a" and "a_list": both make the tool view_a_list; rename one`])
    const aType = compileApp(defineApp({ name: "x", entities: { items, view_a: entity({ fields: { n: Schema.Int } }) }, views: { a: declaration(() => "k") } }))
    expect(Either.isLeft(aType) && aType.left.problems).toEqual([`view "a": its tool view_a_list clashes with a tool of the same name`])
    // Without a key, the same names make one tool each: no clash.
    expect(Either.isRight(compileApp(defineApp({ name: "x", entities: { items }, views: { a: declaration(), a_list: declaration() } })))).toBe(true)
  })

  it("name every key that is not one", () => {
    expect(viewKeyProblem("ann")).toBeUndefined()
    expect(viewKeyProblem("a/b ?#%")).toBeUndefined()
    expect(viewKeyProblem("")).toMatch(/must not be empty/)
    expect(viewKeyProblem("x".repeat(MAX_VIEW_KEY_LENGTH + 1))).toMatch(/at most 256 characters/)
    expect(viewKeyProblem("a\nb")).toMatch(/control character/)
    expect(viewKeyProblem(12)).toMatch(/must be a string or undefined, got number/)
    const compiled = Either.getOrThrow(compileApp(app(() => "")))
    expect(() => compiled.views.get("per_owner")!.key!({} as never)).toThrow(/view per_owner: key: a key must not be empty/)
  })

  it("store an entry's text as it is, and name it by a percent-encoded URI", () => {
    const text = viewEntryJson(12, '{"n":1,"tags":["a"]}')
    expect(parseViewEntry(text)).toEqual({ seq: 12, json: '{"n":1,"tags":["a"]}' })
    expect(parseViewEntry('{"seq":-1,"value":1}')).toBeUndefined()
    expect(parseViewEntry("not an entry")).toBeUndefined()
    expect(viewEntryUri("per_owner", "a/b c")).toBe("wo://views/per_owner/a%2Fb%20c")
  })
})
