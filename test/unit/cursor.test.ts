/**
 * The one cursor encoding (projections/cursor.ts): every list's cursor is base64url JSON decoded through its
 * Schema; a cursor of another list, type or order, or not a cursor at all, is refused, never misread.
 */
import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import { decodeCursor, encodeCursor, ResourceCursor, ToolsCursor } from "../../src/projections/cursor.ts"

describe("cursors", () => {
  it("a row page's cursor names its type and order", () => {
    const plain = encodeCursor("products", { id: 7, value: undefined })
    expect(decodeCursor("products", plain)).toEqual({ id: 7, value: undefined })
    expect(decodeCursor("articles", plain)).toBeUndefined()
    expect(decodeCursor("products", plain, "-name")).toBeUndefined()
    const ordered = encodeCursor("products", { id: 7, value: "b" }, "-name")
    expect(decodeCursor("products", ordered, "-name")).toEqual({ id: 7, value: "b" })
    expect(decodeCursor("products", ordered)).toBeUndefined()
    // An absent value travels as null and comes back absent.
    expect(decodeCursor("products", encodeCursor("products", { id: 2, value: undefined }, "name"), "name")).toEqual({ id: 2, value: undefined })
    // The format rows have always used: base64url of {"t","a"}.
    expect(JSON.parse(Buffer.from(plain, "base64url").toString("utf8"))).toEqual({ t: "products", a: 7 })
  })

  it("resources/list and tools/list cursors round-trip, and keep the formats issued before", () => {
    expect(Option.getOrThrow(ResourceCursor.decode(ResourceCursor.encode({ p: -1, a: 3 })))).toEqual({ p: -1, a: 3 })
    expect(ResourceCursor.decode(Buffer.from(JSON.stringify({ p: 0, a: 5 })).toString("base64url"))).toEqual(Option.some({ p: 0, a: 5 }))
    expect(ToolsCursor.encode(100)).toBe(Buffer.from("100").toString("base64url"))
    expect(ToolsCursor.decode(Buffer.from("100").toString("base64url"))).toEqual(Option.some(100))
  })

  it("anything else is refused", () => {
    for (const junk of ["", "%%%", Buffer.from("{").toString("base64url"), Buffer.from("[1]").toString("base64url"), Buffer.from("-1").toString("base64url")]) {
      expect(Option.isNone(ToolsCursor.decode(junk))).toBe(true)
      expect(Option.isNone(ResourceCursor.decode(junk))).toBe(true)
      expect(decodeCursor("products", junk)).toBeUndefined()
    }
    expect(Option.isNone(ResourceCursor.decode(ToolsCursor.encode(3)))).toBe(true)
    expect(decodeCursor("products", ResourceCursor.encode({ p: 0, a: 1 }))).toBeUndefined()
  })

  it("a tampered key is refused: not finite, one where none is written, none where one is, or one the order's field cannot hold", () => {
    const raw = (text: string) => Buffer.from(text).toString("base64url")
    const isNumber = (v: unknown) => typeof v === "number"
    expect(decodeCursor("products", raw(`{"t":"products","a":1,"o":"-price","k":3}`), "-price", isNumber)).toEqual({ id: 1, value: 3 })
    expect(decodeCursor("products", raw(`{"t":"products","a":1,"o":"-price","k":1e400}`), "-price")).toBeUndefined()
    expect(decodeCursor("products", raw(`{"t":"products","a":1,"o":"-price","k":"zz"}`), "-price", isNumber)).toBeUndefined()
    expect(decodeCursor("products", raw(`{"t":"products","a":1,"o":"-price","k":null}`), "-price", isNumber)).toBeUndefined()
    expect(decodeCursor("products", raw(`{"t":"products","a":1,"o":"-price"}`), "-price")).toBeUndefined()
    expect(decodeCursor("products", raw(`{"t":"products","a":1,"k":"zz"}`))).toBeUndefined()
    expect(decodeCursor("products", raw(`{"t":"products","a":"1"}`))).toBeUndefined()
    expect(decodeCursor("products", raw(`{"t":"products","o":"-price","k":3}`), "-price")).toBeUndefined()
  })
})
