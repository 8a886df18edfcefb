/**
 * Keyed views in a real `wo run`: entries written in the batch of their events survive kill -9 mid-load (every
 * acknowledged write is in its key's entry, read from the store the killed process left), `wo verify --app` and
 * `wo replay --app` fold the entries from the log and agree, leaving every file of the dir as it was; once one entry record is edited (its checksum made
 * good again), both name the key that differs, and an extra and a missing key too.
 */
import { ClassicLevel } from "classic-level"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { seal, unseal } from "../../src/log/record.ts"
import { viewKey } from "../../src/log/classic-level/log-keys.ts"
import { writeAppDir } from "../../testkit/app-dir.ts"
import { filesOf } from "../../testkit/dir-files.ts"
import { http, runWo, spawnServer, tempDir } from "../../testkit/server.ts"

const APP = `
import { Schema } from "effect"
import { defineApp, entity } from "writeonce"

const tasks = entity({ fields: { owner: Schema.String, title: Schema.String } })

export default defineApp({
  name: "keyed_durability",
  entities: { tasks },
  views: (view) => ({
    titles_by_owner: view({
      schema: Schema.Struct({ count: Schema.Int, titles: Schema.Array(Schema.String) }),
      initial: { count: 0, titles: [] },
      on: { tasks: ["created"] },
      key: ({ after }) => after!.owner,
      evolve: (entry, { after }) => ({ count: entry.count + 1, titles: [...entry.titles, after!.title] })
    })
  })
})
`
const NAME = "titles_by_owner"
const OWNERS = 40
const KILL_AT_ACKS = 150

/** The view's record and entries, as stored: read with classic-level once no process has the dir open. */
const storedEntries = async (dataDir: string) => {
  const db = new ClassicLevel<string, string>(dataDir)
  try {
    const record = JSON.parse(unseal(`v!${NAME}`, (await db.get(`v!${NAME}`))!)) as { definition: string }
    const prefix = `w!${NAME}!${record.definition}!`
    const entries = new Map<string, { count: number; titles: Array<string> }>()
    for await (const [key, value] of db.iterator({ gte: prefix, lt: `w!${NAME}!${record.definition}"` })) {
      entries.set(key.slice(prefix.length), (JSON.parse(unseal(key, value)) as { value: { count: number; titles: Array<string> } }).value)
    }
    return { prefix, entries }
  } finally {
    await db.close()
  }
}

describe("keyed views in a real wo run", () => {
  const appDir = writeAppDir(APP)
  const dataDir = tempDir("wo-keyed-kill-")

  it("keeps every acknowledged write's entry through kill -9 mid-load", async () => {
    const server = await spawnServer(appDir, dataDir)
    const acked: Array<{ owner: string; title: string }> = []
    let reached!: () => void
    const enough = new Promise<void>((resolve) => (reached = resolve))
    let stop = false
    const worker = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const owner = `owner ${(w * 7 + i) % OWNERS}`
        const title = `w${w}-${i}`
        try {
          const res = await http(`${server.url}/api/tasks`, { method: "POST", body: { owner, title } })
          if (res.status === 201) {
            acked.push({ owner, title })
            if (acked.length >= KILL_AT_ACKS) reached()
          }
        } catch {
          return // the server is gone
        }
      }
    }
    const workers = Array.from({ length: 16 }, (_, w) => worker(w))
    // A count, not a time: a loaded machine makes the test slower, never check less.
    await Promise.race([enough, Promise.all(workers)])
    server.child.kill("SIGKILL")
    stop = true
    await Promise.all(workers)
    expect(acked.length).toBeGreaterThanOrEqual(KILL_AT_ACKS)

    // The checks fold the entries from the log and compare them with those the killed process left, and write nothing.
    const before = filesOf(dataDir)
    const verified = await runWo(["verify", "--app", appDir, dataDir])
    expect(verified.stderr).toBe("")
    expect(verified.code).toBe(0)
    const replayed = await runWo(["replay", "--app", appDir, dataDir])
    expect(replayed.stdout).toMatch(new RegExp(`view ${NAME}: equals the log's fold: \\d+ entries equal the log's fold`))
    expect(replayed.code).toBe(0)
    expect(filesOf(dataDir)).toEqual(before)

    const { entries } = await storedEntries(dataDir)
    for (const { owner, title } of acked) expect(entries.get(owner)?.titles, `${owner} ${title}`).toContain(title)
    for (const entry of entries.values()) expect(entry.count).toBe(entry.titles.length)
  }, 180_000)

  it("names the key whose stored entry differs from the log's fold, and the extra and missing keys", async () => {
    const copy = tempDir("wo-keyed-tampered-")
    fs.cpSync(dataDir, copy, { recursive: true })
    const { prefix, entries } = await storedEntries(copy)
    const [first, second] = [...entries.keys()]
    const db = new ClassicLevel<string, string>(copy)
    // A wrong count under a good checksum: what a bug in the writer would leave, not a damaged disk.
    const wrong = `{"seq":1,"value":${JSON.stringify({ ...entries.get(first)!, count: 999 })}}`
    await db.put(prefix + first, seal(prefix + first, wrong))
    await db.del(prefix + second)
    await db.put(`${prefix}nobody`, seal(`${prefix}nobody`, `{"seq":1,"value":{"count":1,"titles":["x"]}}`))
    await db.close()

    const replayed = await runWo(["replay", "--app", appDir, copy])
    expect(replayed.code).toBe(1)
    expect(replayed.stderr).toContain(`MISMATCH: view ${NAME}: 3 of its entries differ from the log's fold`)
    expect(replayed.stderr).toContain(`MISMATCH: view ${NAME} key ${first}: stored {"count":999,`)
    expect(replayed.stderr).toMatch(new RegExp(`MISMATCH: view ${NAME} key ${second}: not stored, the log's fold .* \\(missing\\)`))
    expect(replayed.stderr).toMatch(new RegExp(`MISMATCH: view ${NAME} key nobody: stored .*, the log's fold has no entry \\(extra\\)`))

    const verified = await runWo(["verify", "--app", appDir, copy])
    expect(verified.code).toBe(1)
    expect(verified.stderr).toContain(`view ${NAME} key ${first}: stored {"count":999,`)
    expect(verified.stderr).toContain(`view ${NAME} key nobody:`)
    // Without the app the records are only checked: each is a well-formed entry under a good checksum.
    const plain = await runWo(["verify", copy])
    expect(plain.code).toBe(0)
    expect(path.isAbsolute(copy)).toBe(true)
  }, 180_000)

  it("takes a keyed view with no record and no entries for one declared after the events (stale), and entries without their record for damage", async () => {
    const copy = tempDir("wo-keyed-norecord-")
    fs.cpSync(dataDir, copy, { recursive: true })
    const { prefix } = await storedEntries(copy)
    const db = new ClassicLevel<string, string>(copy)
    await db.del(viewKey(NAME))
    await db.close()
    const orphaned = await runWo(["verify", "--app", appDir, copy])
    expect(orphaned.code).toBe(1)
    expect(orphaned.stderr).toContain(`view ${NAME}: entries are stored, but not the view's record`)

    // No entries either: as a data dir written before the view was declared. The next start folds it.
    const again = new ClassicLevel<string, string>(copy)
    for await (const key of again.keys({ gte: prefix, lt: `${prefix}\uffff` })) await again.del(key)
    await again.close()
    const declaredLater = await runWo(["verify", "--app", appDir, copy])
    expect(declaredLater.code, declaredLater.stderr).toBe(0)
    const replayed = await runWo(["replay", "--app", appDir, copy])
    expect(replayed.code, replayed.stderr).toBe(0)
    expect(replayed.stdout).toMatch(new RegExp(`view ${NAME}: stale: not stored yet \\(declared after these events\\); the next start folds it from the log \\(\\d+ entries\\)`))
  }, 180_000)
})
