/**
 * plainData (domain/decide/user-code.ts): the copy of a value user code returned, checked to be plain JSON data. Its
 * fast copy of nested plain objects and arrays must answer as the full walk does: an equal copy sharing nothing, and
 * for anything else the full walk's issue at its path.
 */
import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { plainData } from "../../src/domain/decide/user-code.ts"

/** Every object and array reachable from `v`. */
const objectsOf = (v: unknown, into = new Set<object>()): Set<object> => {
  if (typeof v === "object" && v !== null) {
    into.add(v)
    for (const x of Object.values(v)) objectsOf(x, into)
  }
  return into
}

describe("plainData", () => {
  it("copies nested plain JSON data: equal, sharing no object with what it was given", () => {
    // JSON without a "__proto__" key: plainData refuses that key by design (a reserved key), at any depth.
    const json = fc.jsonValue({ maxDepth: 6 }).filter((v) => !JSON.stringify(v).includes('"__proto__":'))
    fc.assert(fc.property(json, (v) => {
      const copied = plainData(v)
      expect(Either.isRight(copied)).toBe(true)
      const copy = Either.getOrThrow(copied)
      expect(copy).toEqual(JSON.parse(JSON.stringify(v)))
      const given = objectsOf(v)
      for (const o of objectsOf(copy)) expect(given.has(o)).toBe(false)
    }), { numRuns: 300 })
  })

  it("names what is not plain JSON data deep inside arrays and objects, at its path", () => {
    const cycle: Record<string, unknown> = { a: 1 }
    cycle.self = { back: cycle }
    const cases: Array<[unknown, string, RegExp]> = [
      [{ loans: ["a", Number.NaN] }, "loans.1", /finite/],
      [{ loans: ["a", undefined] }, "loans.1", /undefined/],
      [{ deep: [{ at: new Date(0) }] }, "deep.0.at", /Date/],
      [{ deep: [[1, 2n]] }, "deep.0.1", /BigInt/],
      [cycle, "self.back", /cycle/],
      [[{ f: () => 1 }], "0.f", /function/],
      [{ a: [JSON.parse('{"__proto__": 1}')] }, "a.0.__proto__", /reserved key/]
    ]
    for (const [value, path, message] of cases) {
      const out = plainData(value)
      expect(Either.isLeft(out)).toBe(true)
      const issue = Either.isLeft(out) ? out.left[0] : undefined
      expect(issue?.path.join(".")).toBe(path)
      expect(issue?.message).toMatch(message)
    }
  })

  it("gives -0 as 0, as JSON does, on the fast copy and the full walk", () => {
    const first = (v: unknown) => (Either.getOrThrow(plainData(v)) as { a: Array<number> }).a[0]
    expect(Object.is(first({ a: [-0] }), 0)).toBe(true)
    expect(Object.is(Either.getOrThrow(plainData(-0)), 0)).toBe(true)
    // An undefined value beside it sends the object to the full walk (which leaves it out).
    expect(Object.is(first({ a: [-0], b: undefined }), 0)).toBe(true)
  })

  it("leaves out undefined object values, as JSON does", () => {
    expect(Either.getOrThrow(plainData({ a: 1, b: undefined, c: [{ d: undefined, e: "x" }] }))).toEqual({ a: 1, c: [{ e: "x" }] })
  })
})
