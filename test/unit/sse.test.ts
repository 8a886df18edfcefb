import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { parseSse, sseFrame, sseParser, type SseEvent } from "../../src/support/sse.ts"

/** Every event of `text` fed to one parser in the given pieces. */
const parsePieces = (pieces: ReadonlyArray<string>) => {
  const parser = sseParser()
  return { events: pieces.flatMap((piece) => parser.push(piece)), rest: parser.rest() }
}

/** `text` cut at the given offsets. */
const cut = (text: string, offsets: ReadonlyArray<number>) => {
  const at = [...new Set(offsets.map((o) => o % (text.length + 1)))].sort((a, b) => a - b)
  return [0, ...at].map((from, k) => text.slice(from, at[k] ?? text.length))
}

describe("sseFrame", () => {
  it("writes the server's messages byte for byte as before", () => {
    expect(sseFrame({ id: "s-1", event: "message", data: '{"a":1}' })).toBe('id: s-1\nevent: message\ndata: {"a":1}\n\n')
    expect(sseFrame({ id: "s-0", data: "" })).toBe("id: s-0\ndata: \n\n")
    expect(sseFrame({ event: "message", retry: "500", data: "x" })).toBe("event: message\nretry: 500\ndata: x\n\n")
  })

  it("writes each line of multi-line data and comments as its own field line", () => {
    expect(sseFrame({ data: "a\nb\r\nc\rd" })).toBe("data: a\ndata: b\ndata: c\ndata: d\n\n")
    expect(sseFrame({ comment: "heartbeat" })).toBe(": heartbeat\n\n")
    expect(sseFrame({ comment: "one\ntwo" })).toBe(": one\n: two\n\n")
  })
})

describe("sseParser", () => {
  it("reads id, event, retry and data, joining data lines, dropping one space after the colon", () => {
    expect(parseSse("id: 7\nevent: message\nretry: 1500\ndata: a\ndata:  b\ndata:c\ndata\n\n")).toEqual([
      { id: "7", event: "message", retry: "1500", data: "a\n b\nc\n" }
    ])
  })

  it("reads a block of comments only as a comment event, and drops comments beside fields", () => {
    expect(parseSse(": heartbeat\n\n:one\n: two\n\n: note\ndata: x\n\n")).toEqual([{ comment: "heartbeat" }, { comment: "one\ntwo" }, { data: "x" }])
  })

  it("ignores unknown fields and blocks with nothing an event has (a chunk-size line, extra blank lines)", () => {
    expect(parseSse("dd\r\nevent: message\ndata: x\n\n\r\n\n\nfoo: bar\n\n")).toEqual([{ event: "message", data: "x" }])
  })

  it("keeps an event without data (a priming event has an empty data line; no data line at all is no data)", () => {
    expect(parseSse("id: 1\ndata: \n\nid: 2\n\n")).toEqual([{ id: "1", data: "" }, { id: "2" }])
  })

  it("ends lines at CRLF, CR or LF alike, a CRLF split across chunks included", () => {
    const expected = [{ id: "1", data: "a\nb" }, { data: "c" }]
    expect(parseSse("id: 1\r\ndata: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n")).toEqual(expected)
    expect(parseSse("id: 1\rdata: a\rdata: b\r\rdata: c\r\r")).toEqual(expected)
    expect(parsePieces(["id: 1\r", "\ndata: a\r", "\ndata: b\r", "\n\r", "\ndata: c\r\n\r", "\n"])).toEqual({ events: expected, rest: "" })
  })

  it("returns an event as soon as its blank line arrives, and keeps the unterminated tail", () => {
    const parser = sseParser()
    expect(parser.push("data: a\n")).toEqual([])
    expect(parser.rest()).toBe("data: a\n")
    expect(parser.push("\nid: 2\nda")).toEqual([{ data: "a" }])
    expect(parser.rest()).toBe("id: 2\nda")
    expect(parser.push("ta: b\n\n")).toEqual([{ id: "2", data: "b" }])
    expect(parser.rest()).toBe("")
  })

  it("reads what sseFrame writes, cut anywhere, with any line endings", () => {
    const text = fc.string({ unit: fc.constantFrom("a", " ", ":", "\n", "\r", "{", "é") , maxLength: 12 })
    const line = fc.string({ unit: fc.constantFrom("a", " ", ":", "{", "é"), maxLength: 8 })
    const event: fc.Arbitrary<SseEvent> = fc.oneof(
      line.map((comment) => ({ comment })),
      fc.record({ id: line.filter((s) => !s.startsWith(" ")), event: line.filter((s) => !s.startsWith(" ")), retry: fc.nat().map(String), data: text }, { requiredKeys: ["data"] })
    )
    fc.assert(
      fc.property(fc.array(event, { maxLength: 5 }), fc.array(fc.nat(), { maxLength: 8 }), fc.constantFrom("\n", "\r\n", "\r"), (events, offsets, eol) => {
        const wire = events.map(sseFrame).join("").replace(/\n/g, eol)
        const expected = events.map((e) => (e.data === undefined ? e : { ...e, data: e.data.replace(/\r\n|\r/g, "\n") }))
        expect(parsePieces(cut(wire, offsets)).events).toEqual(expected)
      })
    )
  })
})
