/**
 * The acknowledged-head record file (src/log/classic-level/acked-head.ts) and its open-time check (acked-check.ts): slots that
 * survive a torn write, the highest acked and counters over whole slots, and the verdicts on a store's head.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { checkAckedHead } from "../../src/log/classic-level/acked-check.ts"
import { ACKED_FILE, openAckedHead, readAckedRecord } from "../../src/log/classic-level/acked-head.ts"
import { acceptedGap, lossBetween, type AcceptedLoss } from "../../src/log/classic-level/accepted-loss.ts"

const dir = () => fs.mkdtempSync(path.join(os.tmpdir(), "wo-acked-unit-"))
const found = (d: string) => {
  const r = readAckedRecord(d)
  if (r._tag !== "Found") throw new Error(`expected a record, got ${r._tag}`)
  return r.record
}

describe("the acknowledged-head record", () => {
  it("records each acknowledged batch's end and the id counters, and keeps the highest counters", async () => {
    const d = dir()
    expect(readAckedRecord(d)._tag).toBe("Missing")
    const w = openAckedHead(d, 0, new Map([["articles", 2]]), true)
    expect(found(d)).toMatchObject({ acked: 0 })
    await w.acknowledged(3, new Map([["products", 3]]))
    expect(found(d)).toMatchObject({ acked: 3 })
    await w.acknowledged(5, new Map([["products", 5]]))
    await w.flush()
    expect(found(d)).toMatchObject({ acked: 5 })
    expect(found(d).counters).toEqual(new Map([["articles", 2], ["products", 5]]))
    await w.close()
    // Reopened without recreating: the record goes on from there.
    const again = openAckedHead(d, 5, new Map(), false)
    await again.acknowledged(6, new Map())
    await again.close()
    expect(found(d)).toMatchObject({ acked: 6 })
    expect(found(d).counters.get("products")).toBe(5)
  })

  it("survives a torn write of the newest slot: the slot before it is still whole", async () => {
    const d = dir()
    const w = openAckedHead(d, 0, new Map(), true)
    for (let seq = 1; seq <= 4; seq++) await w.acknowledged(seq, new Map([["products", seq]]))
    await w.close()
    const file = path.join(d, ACKED_FILE)
    const bytes = fs.readFileSync(file)
    // Tear the newest slot (the one whose record says acked 4) in half.
    const slot = [0, 1, 2].find((i) => bytes.toString("utf8", i * 16384, i * 16384 + 200).includes('"acked":4'))!
    bytes.fill(0, slot * 16384 + 20, slot * 16384 + 16384)
    fs.writeFileSync(file, bytes)
    expect(found(d)).toMatchObject({ acked: 3 })
    // Every slot damaged: the record is damaged, not missing.
    fs.writeFileSync(file, Buffer.alloc(bytes.length, 0x41))
    expect(readAckedRecord(d)._tag).toBe("Damaged")
  })

  it("judges a store's head against it", () => {
    const record = { acked: 10, counters: new Map([["products", 8]]) }
    const at = (lastSeq: number) => checkAckedHead({ lastSeq, hadRecord: true }, { _tag: "Found", record, gens: [] })
    expect(at(10)._tag).toBe("Whole")
    expect(at(12)._tag).toBe("Whole") // batches that landed but were never acknowledged (a crash, a failed record write)
    const lost = at(7)
    expect(lost._tag).toBe("Lost")
    expect(lost._tag === "Lost" && lost.reason).toMatch(/^3 acknowledged events are missing: the store ends at seq 7, but seqs 8\.\.10/)
    expect(checkAckedHead({ lastSeq: 5, hadRecord: false }, { _tag: "Missing" })._tag).toBe("NoRecord") // an older writeonce's store
    expect(checkAckedHead({ lastSeq: 5, hadRecord: true }, { _tag: "Missing" })).toMatchObject({ _tag: "Unknown", reason: expect.stringMatching(/is missing, though this store kept one/) })
  })

  it("reads accepted gaps and the version jumps across them", () => {
    const losses: ReadonlyArray<AcceptedLoss> = [{ at: "", lostSeqs: [[5, 9], [20, 20]], lostIds: {}, reason: "" }]
    expect(acceptedGap(losses)(5, 9)).toBe(true)
    expect(acceptedGap(losses)(6, 8)).toBe(true)
    expect(acceptedGap(losses)(4, 9)).toBe(false)
    expect(acceptedGap(losses)(9, 10)).toBe(false)
    expect(lossBetween(losses)(3, 12)).toBe(true)
    expect(lossBetween(losses)(10, 19)).toBe(false)
  })
})
