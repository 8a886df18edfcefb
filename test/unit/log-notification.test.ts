/**
 * What a follower reads from a notification of the shared log (follow.ts): the head, the writing node's tag, and the
 * commit's events when the append sent them (each an array of the carried columns, named again as the table's read
 * names them); an older writeonce's payload still names the head, and events that do not parse are none: they are
 * then read from the table.
 */
import { describe, expect, it } from "vitest"
import { carriedEvents, parseNotification } from "../../src/log/postgres/follow.ts"
import { EVENT_ROW_COLUMNS } from "../../src/log/postgres/records.ts"

const carried = (seq: number) => ["" + seq, "items", "" + seq, 1, "created", 1, "1700000000000", null, null, "{\"name\":\"a\"}", "@0011aabb", null, null, "{\"client\":\"rest\"}"]

describe("a notification of the shared log", () => {
  it("names the head alone, the head and the writer, or both and the commit's events", () => {
    expect(parseNotification("12")).toEqual({ head: 12, tag: undefined, events: undefined })
    expect(parseNotification("12 node-a")).toEqual({ head: 12, tag: "node-a", events: undefined })
    const json = JSON.stringify([carried(11), carried(12)])
    expect(parseNotification(`12 node-a ${json}`)).toEqual({ head: 12, tag: "node-a", events: json })
    const events = carriedEvents(json)
    expect(events).toEqual([
      { seq: "11", type: "items", id: "11", version: 1, kind: "created", schema: 1, at: "1700000000000", method: null, params: null, data: "{\"name\":\"a\"}", checksum: "@0011aabb", command: null, correlation: null, actor: "{\"client\":\"rest\"}" },
      expect.objectContaining({ seq: "12", id: "12" })
    ])
    expect(Object.keys(events[0])).toEqual([...EVENT_ROW_COLUMNS])
  })

  it("carries no events when they do not parse, or are not a list of rows of the carried columns", () => {
    expect(carriedEvents("[[")).toEqual([])
    expect(carriedEvents(JSON.stringify(carried(12)))).toEqual([])
    expect(carriedEvents(JSON.stringify([carried(12).slice(1)]))).toEqual([])
    expect(carriedEvents(JSON.stringify([{ seq: "12" }]))).toEqual([])
  })

  it("has no head when the payload does not start with one", () => {
    expect(parseNotification("x node-a").head).toBeUndefined()
    expect(parseNotification(undefined)).toEqual({ head: 0, tag: undefined, events: undefined })
  })
})
