/**
 * An events row read from PostgreSQL decodes to the event that was written, whatever optional columns it carries,
 * and a row in any other form is refused with the Schema decode's account of it (the hand-checked form is only a
 * shortcut for sound rows: records.ts).
 */
import { describe, expect, it } from "vitest"
import type { StoredEvent } from "../../src/domain/events.ts"
import { decodeEvent, eventColumns } from "../../src/log/postgres/records.ts"

/** An events row as the driver hands it: bigint and json columns as text. */
const asRead = (event: StoredEvent): Record<string, unknown> => {
  const c = eventColumns(event)
  return { ...c, seq: String(c.seq), at: String(c.at) }
}

/** `plain`'s row with some columns replaced. */
const plainWith = (columns: Record<string, unknown>) => () => decodeEvent({ ...asRead(plain), ...columns })

const plain: StoredEvent = { seq: 7, at: 1_700_000_000_123, type: "products", id: "3", version: 1, schema: 1, kind: "created", data: { name: "n", price: 2.5 } }
const full: StoredEvent = {
  seq: 9_007_199_254_740, at: 1, type: "loans", id: "12", version: 4, schema: 2, kind: "invoked", method: "lend", params: { member: "1" },
  data: { book: "2" }, command: "lend", correlation: "c-1", actor: { kind: "principal", subject: "s" } as unknown as StoredEvent["actor"]
}

describe("decoding an events row", () => {
  it("gives back the event written, with and without its optional columns", () => {
    expect(decodeEvent(asRead(plain))).toEqual(plain)
    expect(decodeEvent(asRead(full))).toEqual(full)
  })

  it("refuses a row in any other form, saying what does not decode", () => {
    expect(plainWith({ kind: "renamed" })).toThrow(/corrupt record at key e!7: the events row does not decode/)
    expect(plainWith({ version: "1" })).toThrow(/the events row does not decode/)
    expect(plainWith({ at: "-1" })).toThrow(/the events row does not decode/)
    expect(plainWith({ method: 3 })).toThrow(/the events row does not decode/)
  })

  it("still verifies the checksum", () => {
    expect(plainWith({ data: '{"name":"m","price":2.5}' })).toThrow("corrupt record at key e!7: checksum mismatch")
  })
})
