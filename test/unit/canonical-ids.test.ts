/**
 * The store's side of one id, one spelling: a row key is built only from a canonical id (another spelling would
 * pad onto the same key), cursors carry only ids the store can key, and `wo verify` names an event that a log
 * written before the rule holds under another spelling, saying how to repair it. Real classic-level stores.
 */
import { ClassicLevel } from "classic-level"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { isCanonicalId } from "../../src/domain/ids.ts"
import { openDb } from "../../src/log/classic-level/level-db.ts"
import { idPart } from "../../src/log/classic-level/index-keys.ts"
import * as K from "../../src/log/classic-level/log-keys.ts"
import { seal, unsealJson } from "../../src/log/record.ts"
import { verifyStore } from "../../src/log/classic-level/offline/verify.ts"
import { decodeCursor, encodeCursor } from "../../src/projections/cursor.ts"
import { library } from "../../testkit/library-app.ts"
import { http, startServer } from "../../testkit/server.ts"

const OTHER_SPELLINGS = ["01", "000000000001", "+1", "-1", " 1", "1 ", "1.0", "1e0", "0x1", "", "1000000000000", "١"]

describe("a row key and an index key's id part", () => {
  it("are built from a canonical id, and refuse any other spelling instead of padding it onto the same key", () => {
    expect(K.rowKey("members", "1")).toBe("r!members!000000000001")
    expect(K.rowKey("members", "999999999999")).toBe("r!members!999999999999")
    expect(K.rowKey("members", "0")).toBe("r!members!000000000000")
    for (const id of OTHER_SPELLINGS) {
      expect(isCanonicalId(id), id).toBe(false)
      expect(() => K.rowKey("members", id), id).toThrow(/non-canonical id/)
      expect(() => idPart(id), id).toThrow(/non-canonical id/)
    }
  })
})

describe("a row cursor", () => {
  it("carries only ids the store can key: a larger one is no cursor of this server", () => {
    expect(decodeCursor("members", encodeCursor("members", { id: 999_999_999_999, value: undefined }))).toEqual({ id: 999_999_999_999, value: undefined })
    const beyond = Buffer.from(JSON.stringify({ t: "members", a: 1e21 })).toString("base64url")
    expect(decodeCursor("members", beyond)).toBeUndefined()
    const past = Buffer.from(JSON.stringify({ t: "members", a: 1_000_000_000_000 })).toString("base64url")
    expect(decodeCursor("members", past)).toBeUndefined()
  })
})

describe("wo verify", () => {
  it("names an event whose id is spelled another way, and says how to repair", { timeout: 60_000 }, async () => {
    const server = await startServer(library)
    const dataDir = server.dataDir
    expect((await http(`${server.url}/api/members`, { method: "POST", body: { name: "Ann" } })).status).toBe(201)
    expect((await http(`${server.url}/api/members/1`, { method: "PATCH", body: { name: "Bo" } })).status).toBe(200)
    await server.close()
    const verify = () => Effect.runPromise(Effect.scoped(Effect.flatMap(openDb(dataDir), verifyStore)))
    expect((await verify()).problems).toEqual([])

    // The update as a writer without the rule logged it: `PATCH /api/members/01` reached row 1 (its version 2) but
    // named entity members/01.
    const db = new ClassicLevel<string, string>(dataDir, { keyEncoding: "utf8", valueEncoding: "utf8" })
    await db.open()
    const key = K.eventKey(2)
    const event = unsealJson<Record<string, unknown>>(key, (await db.get(key))!)
    expect(event).toMatchObject({ type: "members", id: "1", version: 2 })
    await db.put(key, seal(key, JSON.stringify({ ...event, id: "01" })))
    await db.close()

    const problems = (await verify()).problems
    expect(problems[0]).toBe(
      'event 2: members "01" is not a canonical id (written by a writeonce that accepted other spellings of ids); ' +
        'see "Non-canonical ids in a log" in docs/durability.md to repair'
    )
  })
})
