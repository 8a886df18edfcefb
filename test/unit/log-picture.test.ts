/**
 * A node's picture of the shared log (log/postgres/log-picture.ts): the head and the id counters it plans its next
 * append on. After a batch written behind other nodes' commits (shifted), the head is past those commits before the
 * tailer delivers them: their creates must still move the counters of the other types, and never those of the
 * batch's own types (which the append function checked include them). No database: the picture alone.
 */
import { describe, expect, it } from "vitest"
import type { StoredEvent } from "../../src/domain/events.ts"
import { makeLogPicture, pictureAt, seePicture } from "../../src/log/postgres/log-picture.ts"

const event = (seq: number, type: string, id: string, kind: StoredEvent["kind"], version = 1): StoredEvent => ({
  seq,
  at: 0,
  type,
  id,
  version,
  kind,
  data: {}
})

describe("a node's picture of the shared log", () => {
  it("after a shifted batch, the others' creates before it still move the counters of other types, once", () => {
    const picture = makeLogPicture(10, [
      { type: "products", lastId: 5, rowCount: 5 },
      { type: "orders", lastId: 2, rowCount: 2 }
    ])
    // Other nodes wrote 11 (an order) and 12 (a product repriced); this node's batch went to 13-14, two products
    // created: the function checked the products' counters, which the plan moved to 7.
    pictureAt(picture, 14, [["products", { lastId: 7, rowCount: 7 }]])
    expect(picture.head).toBe(14)
    // The tailer delivers the others' commits afterwards, and (read back now and then) the node's own.
    seePicture(picture, [event(11, "orders", "3", "created"), event(12, "products", "4", "updated", 2)])
    seePicture(picture, [event(13, "products", "6", "created"), event(14, "products", "7", "created")])
    expect(picture.counts.get("orders")).toEqual({ lastId: 3, rowCount: 3 })
    expect(picture.counts.get("products")).toEqual({ lastId: 7, rowCount: 7 })
    expect(picture.head).toBe(14)
    // Delivered twice (a tailer following again): counted once.
    seePicture(picture, [event(11, "orders", "3", "created")])
    expect(picture.counts.get("orders")).toEqual({ lastId: 3, rowCount: 3 })
  })

  it("a type first created by another node counts from the head read at start; a delete lowers its row count", () => {
    const picture = makeLogPicture(4, [])
    seePicture(picture, [event(5, "loans", "1", "created"), event(6, "loans", "2", "created"), event(7, "loans", "1", "deleted", 2)])
    expect(picture.counts.get("loans")).toEqual({ lastId: 2, rowCount: 1 })
    expect(picture.head).toBe(7)
  })

  it("counters the log delivered past a written batch are not put back to the batch's", () => {
    const picture = makeLogPicture(0, [])
    seePicture(picture, [event(1, "products", "1", "created"), event(2, "products", "2", "created")])
    pictureAt(picture, 1, [["products", { lastId: 1, rowCount: 1 }]])
    expect(picture.counts.get("products")).toEqual({ lastId: 2, rowCount: 2 })
    expect(picture.head).toBe(2)
  })
})
