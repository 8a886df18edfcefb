/**
 * The embedded keyed-view store's cache (projections/views/keyed-store.ts) on a real classic-level store: a key known
 * to have no entry is answered from the cache, and nothing cached outlives a cleared generation. Records put straight
 * into the database (behind the store's back) show which reads went to the store.
 */
import { ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { LevelDb, levelDbLayer, type LevelDbShape } from "../../src/log/classic-level/level-db.ts"
import { viewEntryKey } from "../../src/log/classic-level/log-keys.ts"
import { seal } from "../../src/log/record.ts"
import { viewEntryJson } from "../../src/log/view-entry-record.ts"
import { levelKeyedStore, type KeyedStore } from "../../src/projections/views/keyed-store.ts"
import { tempDir } from "../../testkit/server.ts"

const NAME = "loans_by_member"
const DEF = "d1"

describe("keyed store cache (classic-level)", () => {
  let runtime: ManagedRuntime.ManagedRuntime<LevelDb, unknown>
  let h: LevelDbShape
  let store: KeyedStore
  beforeAll(async () => {
    runtime = ManagedRuntime.make(levelDbLayer(tempDir("wo-keyed-store-")))
    h = await runtime.runPromise(LevelDb)
    store = levelKeyedStore(h, 1024 * 1024)
  })
  afterAll(() => runtime.dispose())

  /** Puts an entry straight into the database, as no batch of this store did. */
  const putBehind = (key: string, seq: number, value: string) => {
    const storeKey = viewEntryKey(NAME, DEF, key)
    return h.current!()!.put(storeKey, seal(storeKey, viewEntryJson(seq, value)))
  }

  it("answers a key read and not found from the cache, until it forgets", async () => {
    expect(store.read(NAME, DEF, "a")).toBeUndefined()
    await putBehind("a", 7, '{"loans":["1"]}')
    expect(store.read(NAME, DEF, "a")).toBeUndefined()
    store.forget()
    expect(store.read(NAME, DEF, "a")).toEqual({ json: '{"loans":["1"]}', seq: 7 })
  })

  it("answers an entry a committed batch removed from the cache, without reading the store", async () => {
    await putBehind("b", 3, '{"loans":["2"]}')
    store.committed([{ name: NAME, definition: DEF, key: "b", json: viewEntryJson(4, '{"loans":["2","3"]}') }])
    expect(store.read(NAME, DEF, "b")).toEqual({ json: '{"loans":["2","3"]}', seq: 4 })
    // The database still holds seq 3's entry: only the cache knows it is gone.
    store.committed([{ name: NAME, definition: DEF, key: "b", json: undefined }])
    expect(store.read(NAME, DEF, "b")).toBeUndefined()
    store.committed([{ name: NAME, definition: DEF, key: "b", json: viewEntryJson(9, '{"loans":["4"]}') }])
    expect(store.read(NAME, DEF, "b")).toEqual({ json: '{"loans":["4"]}', seq: 9 })
  })

  it("keeps nothing cached of a generation it clears", async () => {
    store.committed([{ name: NAME, definition: DEF, key: "c", json: viewEntryJson(5, '{"loans":["5"]}') }])
    expect(store.read(NAME, DEF, "c")).toEqual({ json: '{"loans":["5"]}', seq: 5 })
    await runtime.runPromise(store.clear(NAME, DEF))
    expect(store.read(NAME, DEF, "c")).toBeUndefined()
    expect(await runtime.runPromise(store.range(NAME, DEF, undefined, 10))).toEqual([])
  })

  it("reads an entry a background write stored, over a cached absence", async () => {
    expect(store.read(NAME, DEF, "d")).toBeUndefined()
    await runtime.runPromise(store.write([{ name: NAME, definition: DEF, key: "d", json: viewEntryJson(6, '{"loans":["6"]}') }]))
    expect(store.read(NAME, DEF, "d")).toEqual({ json: '{"loans":["6"]}', seq: 6 })
  })
})
