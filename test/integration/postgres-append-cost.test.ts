/**
 * What a shared append costs the node, on a real 3-server cluster (scripts/pg-cluster.sh), counted on the real `pg`
 * client: a batch is one statement when the node's picture of the log is right, two when another node wrote meanwhile
 * (the second planned on the log the first answered), and a transaction only when the log moved again in between;
 * a batch with nothing left to write (stale or duplicate entries) is settled by the function's answer. A node's follower does not
 * read back what the node wrote and applied itself: it reads the other nodes' commits, and the node's own only when
 * the node did not apply them; what it reads keeps the node's picture of the log right.
 */
import { Chunk, Effect, Fiber, ManagedRuntime, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { StoredEvent } from "../../src/domain/events.ts"
import { Duplicate, EventLog, isWritten, Stale, type AppendEntry, type AppendResult } from "../../src/log/event-log.ts"
import { postgresLogLayer } from "../../src/log/postgres/postgres-log.ts"
import { observedPostgresLog } from "../../testkit/observed-pg.ts"
import { waitFor } from "../../testkit/wait.ts"
import { haveBinaries, startCluster, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"

warnIfSkipped("the append cost tests")

/** The follower's read of the log (follow.ts). */
const FOLLOW_READ = /from writeonce\.events e where e\.seq >= \$1 order by e\.seq limit/

/** A log on `url` whose `pg` clients count what they send: statements of the append, rows the follower reads. */
const countedLog = (url: string) => {
  const counts = { statements: 0, followRows: 0 }
  const log = observedPostgresLog(url, {
    sent: (_text, via) => {
      if (via === "client") counts.statements++
    },
    returned: (text, r, via) => {
      if (via === "pool" && FOLLOW_READ.test(text)) counts.followRows += r.rows.length
    }
  })
  return { counts, runtime: ManagedRuntime.make(log) }
}

const created = (id: number, name: string): AppendEntry => {
  const data = { name }
  return { event: { seq: 0, at: Date.now(), type: "items", id: String(id), version: 1, schema: 1, kind: "created", data }, row: { id: String(id), version: 1, ...data } }
}
const updated = (id: number, version: number, name: string): AppendEntry => {
  const data = { name }
  return { event: { seq: 0, at: Date.now(), type: "items", id: String(id), version, schema: 1, kind: "updated", data }, row: { id: String(id), version, ...data } }
}
const written = (r: AppendResult | void) =>
  (r as AppendResult).outcomes.map((o) => (isWritten(o) ? `${o.event.id}@${o.event.version}#${o.event.seq}` : o))

describe.skipIf(!haveBinaries)("the cost of a shared append, on a real PostgreSQL cluster", () => {
  let cluster: PgCluster

  beforeAll(async () => {
    cluster = await startCluster()
  }, 120_000)

  afterAll(() => cluster?.stop())

  it("a batch is one statement when the node's picture of the log is right; two, without a transaction, when another node wrote meanwhile", async () => {
    const store = await cluster.createDatabase("wo_cost_statements")
    const a = countedLog(store)
    const b = ManagedRuntime.make(postgresLogLayer(store))
    try {
      // Started first (the tables created), so that only the appends are counted.
      await a.runtime.runtime()
      const append = async (entries: ReadonlyArray<AppendEntry>) => {
        const before = a.counts.statements
        const result = await a.runtime.runPromise(Effect.flatMap(EventLog, (log) => log.append({ entries, counters: new Map() })))
        return { outcomes: written(result), statements: a.counts.statements - before }
      }
      expect(await append([created(1, "one"), created(2, "two")])).toEqual({ outcomes: ["1@1#1", "2@1#2"], statements: 1 })
      expect(await append([updated(1, 2, "one'")])).toEqual({ outcomes: ["1@2#3"], statements: 1 })

      // Another node creates item 3: this node's picture (head 3, last id 2) is wrong now.
      expect(written(await b.runPromise(Effect.flatMap(EventLog, (log) => log.append({ entries: [created(3, "b")], counters: new Map() }))))).toEqual(["3@1#4"])
      // Alone (refused, nothing written), then alone again on the log as the function answered it (no transaction,
      // no lock held between round trips): the create gets id 4.
      expect(await append([created(3, "three"), updated(2, 2, "two'")])).toEqual({ outcomes: ["4@1#5", "2@2#6"], statements: 2 })
      // The picture is right again.
      expect(await append([updated(1, 3, "one''")])).toEqual({ outcomes: ["1@3#7"], statements: 1 })
      // Decided on a version the log has passed: refused, nothing written. The function's answer settles it (versions
      // only grow): no transaction to confirm it under the lock.
      expect(await append([updated(1, 3, "stale")])).toEqual({ outcomes: [Stale], statements: 1 })

      expect(await cluster.sql("wo_cost_statements", "select seq::int, type, id, version from writeonce.events order by seq")).toEqual(
        [[1, "1", 1], [2, "2", 1], [3, "1", 2], [4, "3", 1], [5, "4", 1], [6, "2", 2], [7, "1", 3]].map(([seq, id, version]) => ({ seq, type: "items", id, version }))
      )
      expect(await cluster.sql("wo_cost_statements", "select seq::int from writeonce.log_head")).toEqual([{ seq: 7 }])
      expect(await cluster.sql("wo_cost_statements", "select last_id::int, row_count::int from writeonce.types")).toEqual([{ last_id: 4, row_count: 4 }])
    } finally {
      await a.runtime.dispose()
      await b.dispose()
    }
  })

  it("a batch with nothing left to write (its key stored, its entity moved on) is settled by the function's answer, in one statement", async () => {
    const store = await cluster.createDatabase("wo_cost_nothing_left")
    const a = countedLog(store)
    try {
      await a.runtime.runtime()
      const claim = { key: "k-1", fingerprint: "f-1", at: Date.now(), first: 0, count: 1 }
      const append = async (entries: ReadonlyArray<AppendEntry>, keys: ReadonlyArray<typeof claim> = []) => {
        const before = a.counts.statements
        const result = await a.runtime.runPromise(Effect.flatMap(EventLog, (log) => log.append({ entries, counters: new Map(), keys })))
        return { result: result as AppendResult, statements: a.counts.statements - before }
      }
      const first = await append([created(1, "one")], [claim])
      expect({ outcomes: written(first.result), statements: first.statements }).toEqual({ outcomes: ["1@1#1"], statements: 1 })
      // The same keyed submission again (a retry), beside an update decided on a version the log has passed.
      const again = await append([created(1, "one"), updated(1, 5, "stale")], [claim])
      expect({ outcomes: again.result.outcomes, statements: again.statements }).toEqual({ outcomes: [Duplicate, Stale], statements: 1 })
      expect(again.result.replays?.get("k-1")).toMatchObject({ key: "k-1", fingerprint: "f-1" })
      expect(again.result.replays?.get("k-1")?.entries.map((e) => `${e.event.id}@${e.event.version}#${e.event.seq}`)).toEqual(["1@1#1"])
      // Nothing was written, and the picture is still right: the next batch is one statement.
      const next = await append([updated(1, 2, "one'")])
      expect({ outcomes: written(next.result), statements: next.statements }).toEqual({ outcomes: ["1@2#2"], statements: 1 })
      expect(await cluster.sql("wo_cost_nothing_left", "select seq::int, id, version from writeonce.events order by seq")).toEqual([
        { seq: 1, id: "1", version: 1 },
        { seq: 2, id: "1", version: 2 }
      ])
    } finally {
      await a.runtime.dispose()
    }
  })

  it("a node's follower does not read back what the node wrote and applied; it reads the other nodes' commits (and then appends in one statement), and the node's own it did not apply", async () => {
    const store = await cluster.createDatabase("wo_cost_follow")
    const a = countedLog(store)
    const b = ManagedRuntime.make(postgresLogLayer(store))
    // Node A's follower, as its tailer runs it: `applied` is how far A has applied the log.
    let applied = 0
    const delivered: Array<StoredEvent> = []
    try {
      const follower = await a.runtime.runPromise(
        Effect.flatMap(EventLog, (log) =>
          Effect.forkDaemon(Stream.runForEachChunk(log.follow!(0, () => applied), (chunk) =>
            Effect.sync(() => {
              for (const e of Chunk.toReadonlyArray(chunk)) {
                delivered.push(e)
                applied = Math.max(applied, e.seq)
              }
            }))))
      )
      /** An append by A, applied by A itself right after it (as its writer's `applyOwn` does), or not. */
      const appendA = (entries: ReadonlyArray<AppendEntry>, applyOwn: boolean) =>
        a.runtime.runPromise(Effect.flatMap(EventLog, (log) =>
          Effect.tap(log.append({ entries, counters: new Map() }), (r) =>
            Effect.sync(() => {
              if (applyOwn) applied = (r as AppendResult).lastSeq
            }))))
      const appendB = (entries: ReadonlyArray<AppendEntry>) =>
        b.runPromise(Effect.flatMap(EventLog, (log) => log.append({ entries, counters: new Map() })))

      await appendA([created(1, "a1"), created(2, "a2"), created(3, "a3")], true)
      await appendA([updated(1, 2, "a1'")], true)
      await appendB([created(5, "b5"), created(6, "b6")])
      await waitFor(() => delivered.length === 2, 20_000)
      expect(delivered.map((e) => `${e.seq}:${e.id}@${e.version}`)).toEqual(["5:4@1", "6:5@1"])
      expect(a.counts.followRows).toBe(2)
      // What A's follower read moved A's picture of the log: its next append is one statement again.
      const before = a.counts.statements
      expect(written(await appendA([created(6, "a6")], true))).toEqual(["6@1#7"])
      expect(a.counts.statements - before).toBe(1)

      // A batch A wrote but did not apply (its tailer was elsewhere): the follower reads it.
      await appendA([updated(2, 2, "a2'")], false)
      await waitFor(() => delivered.length === 3, 20_000)
      expect(delivered[2]).toMatchObject({ seq: 8, id: "2", version: 2 })
      expect(a.counts.followRows).toBe(3)
      await a.runtime.runPromise(Fiber.interrupt(follower))
    } finally {
      await a.runtime.dispose()
      await b.dispose()
    }
  })
})
