/** Fencing's choice among writable PostgreSQL hosts (log/postgres/connection.ts): pure, no server. */
import { describe, expect, it } from "vitest"
import { choosePrimary, type Writable } from "../../src/log/postgres/connection.ts"

const at = (port: number, timeline: number, lsn: number): Writable => ({ host: { host: "127.0.0.1", port }, timeline, lsn: BigInt(lsn) })
const ports = (ws: ReadonlyArray<Writable>) => ws.map((w) => w.host.port)

describe("choosePrimary", () => {
  it("takes the only writable host", () => {
    const { chosen, refused } = choosePrimary([at(1, 1, 100)], 0)
    expect(chosen?.host.port).toBe(1)
    expect(refused).toEqual([])
  })

  it("prefers the highest timeline over the furthest WAL: an old primary back writable is refused", () => {
    // The old primary (first in the host list, timeline 1) wrote further than the promoted one had when it forked.
    const { chosen, refused } = choosePrimary([at(1, 1, 900), at(2, 2, 500), at(3, 3, 100)], 0)
    expect(chosen?.host.port).toBe(3)
    expect(ports(refused)).toEqual([2, 1])
  })

  it("on one timeline, takes the furthest WAL", () => {
    const { chosen, refused } = choosePrimary([at(1, 2, 100), at(2, 2, 300)], 0)
    expect(chosen?.host.port).toBe(2)
    expect(ports(refused)).toEqual([1])
  })

  it("refuses every host below the timeline this node already used, even the only one", () => {
    const { chosen, refused } = choosePrimary([at(1, 1, 900)], 2)
    expect(chosen).toBeUndefined()
    expect(ports(refused)).toEqual([1])
    expect(choosePrimary([at(1, 2, 10)], 2).chosen?.host.port).toBe(1)
  })

  it("chooses nothing from nothing", () => {
    expect(choosePrimary([], 0)).toEqual({ refused: [] })
  })
})
