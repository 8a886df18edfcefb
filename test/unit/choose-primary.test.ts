/** Fencing's choice among writable PostgreSQL hosts (log/postgres/connection.ts): pure, no server. */
import { describe, expect, it } from "vitest"
import { choosePrimary, type Writable } from "../../src/log/postgres/connection.ts"

const at = (port: number, timeline: number, lsn: number, systemIdentifier?: string): Writable => ({
  host: { host: "127.0.0.1", port },
  timeline,
  lsn: BigInt(lsn),
  ...(systemIdentifier !== undefined ? { systemIdentifier } : {})
})
const ports = (ws: ReadonlyArray<Writable>) => ws.map((w) => w.host.port)
const seen = (timeline: number, lsn: number, systemIdentifier?: string) => ({
  seen: { timeline, lsn: BigInt(lsn), ...(systemIdentifier !== undefined ? { systemIdentifier } : {}) },
  kept: true
})

describe("choosePrimary", () => {
  it("takes the only writable host", () => {
    const { chosen, refused } = choosePrimary([at(1, 1, 100)])
    expect(chosen?.host.port).toBe(1)
    expect(refused).toEqual([])
  })

  it("prefers the highest timeline over the furthest WAL: an old primary back writable is refused", () => {
    // The old primary (first in the host list, timeline 1) wrote further than the promoted one had when it forked.
    const { chosen, refused } = choosePrimary([at(1, 1, 900), at(2, 2, 500), at(3, 3, 100)])
    expect(chosen?.host.port).toBe(3)
    expect(ports(refused)).toEqual([2, 1])
  })

  it("on one timeline, takes the furthest WAL", () => {
    const { chosen, refused } = choosePrimary([at(1, 2, 100), at(2, 2, 300)])
    expect(chosen?.host.port).toBe(2)
    expect(ports(refused)).toEqual([1])
  })

  it("refuses every host below the timeline this node has seen, even the only one", () => {
    const { chosen, refused } = choosePrimary([at(1, 1, 900)], seen(2, 0))
    expect(chosen).toBeUndefined()
    expect(ports(refused)).toEqual([1])
    expect(choosePrimary([at(1, 2, 10)], seen(2, 0)).chosen?.host.port).toBe(1)
  })

  it("on the timeline this node has seen, refuses a host behind the WAL position it saw, takes one at or past it", () => {
    expect(choosePrimary([at(1, 2, 99)], seen(2, 100)).chosen).toBeUndefined()
    expect(choosePrimary([at(1, 2, 100)], seen(2, 100)).chosen?.host.port).toBe(1)
    // A newer timeline wins whatever its position: the WAL positions of two timelines do not compare.
    expect(choosePrimary([at(1, 3, 5)], seen(2, 100)).chosen?.host.port).toBe(1)
  })

  it("never takes a host of another cluster, whatever its timeline; takes the store's own host beside it", () => {
    const { chosen, refused } = choosePrimary([at(1, 9, 900, "222"), at(2, 2, 100, "111")], seen(2, 50, "111"))
    expect(chosen?.host.port).toBe(2)
    expect(ports(refused)).toEqual([1])
    expect(choosePrimary([at(1, 9, 900, "222")], seen(2, 50, "111")).chosen).toBeUndefined()
    // A role that may not read the identity leaves that check out.
    expect(choosePrimary([at(1, 2, 60)], seen(2, 50, "111")).chosen?.host.port).toBe(1)
  })

  it("chooses nothing from nothing", () => {
    expect(choosePrimary([])).toEqual({ refused: [] })
  })
})
