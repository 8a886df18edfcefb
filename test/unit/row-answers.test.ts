/** The answers to a row's GET kept by row (row-answers.ts): reused for the same row, bounded by their bodies' bytes. */
import { describe, expect, it } from "vitest"
import { RowAnswers } from "../../src/http/rest/row-answers.ts"

const row = (id: number, version = 1) => ({ id: String(id), version, name: "é".repeat(10) })

describe("RowAnswers", () => {
  it("answers 200 with the row's JSON, its ETag and its Content-Length in bytes; the same answer for the same row", () => {
    const answers = new RowAnswers()
    const r = row(1, 3)
    const first = answers.answer(r)
    const body = JSON.stringify(r)
    expect(first).toEqual({ _tag: "Buffered", status: 200, headers: { "content-type": "application/json", etag: '"3"', "content-length": String(Buffer.byteLength(body)) }, body })
    expect(Buffer.byteLength(body)).toBeGreaterThan(body.length) // bytes, not characters
    expect(answers.answer(r)).toBe(first)
    // A change makes a new row object: its own answer.
    const changed = answers.answer({ ...r, version: 4 })
    expect(changed).not.toBe(first)
    expect(changed).toMatchObject({ headers: { etag: '"4"' } })
  })

  it("keeps at most its bytes of bodies, oldest first out; a body larger than that is answered, not kept", () => {
    const one = Buffer.byteLength(JSON.stringify(row(1)))
    const answers = new RowAnswers(3 * one)
    const rows = [1, 2, 3, 4].map((id) => row(id))
    const first = rows.map((r) => answers.answer(r))
    expect(answers.size).toBe(3)
    expect(answers.answer(rows[3])).toBe(first[3])
    expect(answers.answer(rows[1])).toBe(first[1])
    expect(answers.answer(rows[0])).not.toBe(first[0]) // the oldest went out (and row 2 with it now)
    expect(answers.size).toBe(3)
    const big = { id: "9", version: 1, name: "x".repeat(4 * one) }
    expect(answers.answer(big)).toMatchObject({ status: 200, body: JSON.stringify(big) })
    expect(answers.size).toBe(3)
  })
})
