/**
 * What a shared append costs the node, on a real 3-server cluster (scripts/pg-cluster.sh), counted on the real `pg`
 * client: a batch is one statement when the node's picture of the log is right, two when another node wrote meanwhile
 * (the second planned on the log the first answered), and a transaction only when the log moved again in between;
 * a batch with nothing left to write (stale or duplicate entries) is settled by the function's answer. A node's follower does not
 * take back what the node wrote and applied itself: it takes the other nodes' commits, and the node's own only when
 * the node did not apply them; what it takes keeps the node's picture of the log right. A small commit's events come
 * in its notification; a larger one's are read from the table, and so are events a notification carried that do
 * not verify.
 */
import { Chunk, Duration, Effect, Fiber, ManagedRuntime, type Scope, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { StoredEvent } from "../../src/domain/events.ts"
import pg from "pg"
import { Duplicate, EventLog, isWritten, Stale, type AppendBatch, type AppendEntry, type AppendResult } from "../../src/log/event-log.ts"
import { postgresLogLayer } from "../../src/log/postgres/postgres-log.ts"
import { appendPictured, makeLogPicture } from "../../src/log/postgres/append.ts"
import { PgConnection, pgConnectionLayer, type PgConnectionShape } from "../../src/log/postgres/connection.ts"
import { makeFollow } from "../../src/log/postgres/follow.ts"
import { ensureSchema } from "../../src/log/postgres/schema.ts"
import { observedPostgresLog } from "../../testkit/observed-pg.ts"
import { waitFor } from "../../testkit/wait.ts"
import { haveBinaries, sharedCluster, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"

warnIfSkipped("the append cost tests")

/** The follower's read of the log (follow.ts). */
const FOLLOW_READ = /from writeonce\.events e where e\.seq >= \$1 order by e\.seq limit/

/**
 * A log on `url` whose `pg` clients count what they send: statements of the append, rows the follower reads; and what
 * its follower's LISTEN connection hears: the highest head notified (its handler in the follower has run by the time
 * a test sees it: both run in the same turn), and whether it listens.
 */
const countedLog = (url: string) => {
  const counts = { statements: 0, followRows: 0, heard: 0, listening: false, readsListening: 0 }
  // Whether the follower's read under way was sent once the LISTEN connection listened.
  let readSentListening = false
  const log = observedPostgresLog(url, {
    sent: (text, via) => {
      if (via === "client") counts.statements++
      if (via === "pool" && FOLLOW_READ.test(text)) readSentListening = counts.listening
    },
    returned: (text, r, via) => {
      if (via === "dedicated" && /^listen /.test(text)) counts.listening = true
      if (via === "pool" && FOLLOW_READ.test(text)) {
        counts.followRows += r.rows.length
        if (readSentListening) counts.readsListening++
      }
    },
    notified: (payload) => {
      counts.heard = Math.max(counts.heard, Number(payload?.split(" ")[0]))
    }
  })
  return { counts, runtime: ManagedRuntime.make(log) }
}

/**
 * Until the follower listens and has read the log since (it reads once it listens): from then on, other nodes'
 * commits reach it by their notifications (and by its poll, every 2 s), not by a read already under way.
 */
const listening = (counts: ReturnType<typeof countedLog>["counts"]) => waitFor(() => counts.readsListening > 0, 20_000)

const created = (id: number, name: string): AppendEntry => {
  const data = { name }
  return { event: { seq: 0, at: Date.now(), type: "items", id: String(id), version: 1, schema: 1, kind: "created", data }, row: { id: String(id), version: 1, ...data } }
}
const updated = (id: number, version: number, name: string): AppendEntry => {
  const data = { name }
  return { event: { seq: 0, at: Date.now(), type: "items", id: String(id), version, schema: 1, kind: "updated", data }, row: { id: String(id), version, ...data } }
}
/** Appends `entries` as one batch on the node `runtime` runs. */
const appendOn = (runtime: ManagedRuntime.ManagedRuntime<EventLog, unknown>) => (entries: ReadonlyArray<AppendEntry>) =>
  runtime.runPromise(Effect.flatMap(EventLog, (log) => log.append({ entries, counters: new Map() })))
const written = (r: AppendResult | void) =>
  (r as AppendResult).outcomes.map((o) => (isWritten(o) ? `${o.event.id}@${o.event.version}#${o.event.seq}` : o))

describe.skipIf(!haveBinaries)("the cost of a shared append, on a real PostgreSQL cluster", () => {
  let cluster: PgCluster

  beforeAll(async () => {
    cluster = await sharedCluster()
  }, 120_000)

  afterAll(() => cluster?.stop())

  /** Runs `body` on a connection to a new database `database`, its tables made, in a scope closed after it. */
  const onNewStore = async (database: string, body: (conn: PgConnectionShape) => Effect.Effect<void, unknown, Scope.Scope>) => {
    const runtime = ManagedRuntime.make(pgConnectionLayer(await cluster.createDatabase(database)))
    try {
      await runtime.runPromise(Effect.scoped(Effect.gen(function* () {
        const conn = yield* PgConnection
        yield* ensureSchema(conn)
        yield* body(conn)
      })))
    } finally {
      await runtime.dispose()
    }
  }

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

  it("a batch whose picture is wrong only in its head (another node wrote to other entities meanwhile) is written by its first call, after that commit", async () => {
    const database = "wo_cost_shift"
    const store = await cluster.createDatabase(database)
    const a = countedLog(store)
    const b = ManagedRuntime.make(postgresLogLayer(store))
    // The notifications, as another node's follower hears them: `<new head> <tag>`.
    const heard: Array<number> = []
    const listener = new pg.Client({ host: "127.0.0.1", port: cluster.port(cluster.primary()), user: "postgres", database })
    try {
      await a.runtime.runtime()
      await listener.connect()
      listener.on("notification", (n) => heard.push(Number(n.payload?.split(" ")[0])))
      await listener.query("listen writeonce_log")
      const append = async (entries: ReadonlyArray<AppendEntry>, keys?: AppendBatch["keys"]) => {
        const before = a.counts.statements
        const result = await a.runtime.runPromise(Effect.flatMap(EventLog, (log) => log.append({ entries, counters: new Map(), ...(keys === undefined ? {} : { keys }) })))
        return { outcomes: written(result), lastSeq: (result as AppendResult).lastSeq, statements: a.counts.statements - before }
      }
      const appendB = async (entries: ReadonlyArray<AppendEntry>) => written(await appendOn(b)(entries))
      expect(await append([created(1, "one"), created(2, "two"), created(3, "three")])).toEqual({ outcomes: ["1@1#1", "2@1#2", "3@1#3"], lastSeq: 3, statements: 1 })

      // Another node reprices item 2 twice: this node's picture (head 3) is wrong now, in its head only.
      expect(await appendB([updated(2, 2, "b"), updated(2, 3, "b'")])).toEqual(["2@2#4", "2@3#5"])
      // One call: written after the other node's commit, at seqs 6 and 7 (planned at 4 and 5).
      expect(await append([updated(1, 2, "one'"), updated(3, 2, "three'")])).toEqual({ outcomes: ["1@2#6", "3@2#7"], lastSeq: 7, statements: 1 })
      // The picture moved past both: the next batch is one statement, at the next seq.
      expect(await append([updated(1, 3, "one''")])).toEqual({ outcomes: ["1@3#8"], lastSeq: 8, statements: 1 })

      // A keyed batch is never shifted: its key's stored answer names its seqs (planned again, then written).
      expect(await appendB([updated(2, 4, "b''")])).toEqual(["2@4#9"])
      const claim = { key: "k-shift", fingerprint: "f", at: Date.now(), first: 0, count: 1 }
      expect(await append([updated(3, 3, "three''")], [claim])).toEqual({ outcomes: ["3@3#10"], lastSeq: 10, statements: 2 })
      // Nor one whose entity moved on: refused, whatever the head.
      expect(await appendB([updated(1, 4, "b")])).toEqual(["1@4#11"])
      expect(await append([updated(1, 4, "late")])).toEqual({ outcomes: [Stale], lastSeq: 11, statements: 1 })

      expect(await cluster.sql(database, "select seq::int, id, version from writeonce.events order by seq")).toEqual(
        [[1, "1", 1], [2, "2", 1], [3, "3", 1], [4, "2", 2], [5, "2", 3], [6, "1", 2], [7, "3", 2], [8, "1", 3], [9, "2", 4], [10, "3", 3], [11, "1", 4]]
          .map(([seq, id, version]) => ({ seq, id, version }))
      )
      expect(await cluster.sql(database, "select seq::int from writeonce.log_head")).toEqual([{ seq: 11 }])
      // Every event verifies where it landed (read back from 1, checksums and seq continuity), and the rows are the log's.
      const events = await a.runtime.runPromise(Effect.flatMap(EventLog, (log) => Effect.map(Stream.runCollect(log.readFrom(1)), Chunk.toReadonlyArray)))
      expect(events.map((e) => `${e.id}@${e.version}#${e.seq}`)).toEqual(["1@1#1", "2@1#2", "3@1#3", "2@2#4", "2@3#5", "1@2#6", "3@2#7", "1@3#8", "2@4#9", "3@3#10", "1@4#11"])
      expect(await cluster.sql(database, "select id, version from writeonce.rows order by id")).toEqual([{ id: "1", version: 4 }, { id: "2", version: 4 }, { id: "3", version: 3 }])
      // The shifted commit notified its real head (7), not the planned one (5).
      await waitFor(() => heard.length === 7, 20_000)
      expect(heard).toEqual([3, 5, 7, 8, 9, 10, 11])
    } finally {
      await listener.end()
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

  it("a node's follower does not take back what the node wrote and applied; it takes the other nodes' commits (and then appends in one statement), and the node's own it did not apply; small commits from their notifications, larger ones from the table", async () => {
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
      const appendB = appendOn(b)
      await listening(a.counts)

      await appendA([created(1, "a1"), created(2, "a2"), created(3, "a3")], true)
      await appendA([updated(1, 2, "a1'")], true)
      await appendB([created(5, "b5"), created(6, "b6")])
      await waitFor(() => delivered.length === 2, 20_000)
      expect(delivered.map((e) => `${e.seq}:${e.id}@${e.version}`)).toEqual(["5:4@1", "6:5@1"])
      // Carried by B's notification: nothing read from the table.
      expect(a.counts.followRows).toBe(0)
      // What A's follower took moved A's picture of the log: its next append is one statement again.
      const before = a.counts.statements
      expect(written(await appendA([created(6, "a6")], true))).toEqual(["6@1#7"])
      expect(a.counts.statements - before).toBe(1)

      // A batch A wrote but did not apply (its tailer was elsewhere): the follower reads it (a node does not take its
      // own commits from their notifications).
      await appendA([updated(2, 2, "a2'")], false)
      await waitFor(() => delivered.length === 3, 20_000)
      expect(delivered[2]).toMatchObject({ seq: 8, id: "2", version: 2 })
      expect(a.counts.followRows).toBe(1)

      // A commit of more events than a notification carries: read from the table, in order.
      await appendB(Array.from({ length: 70 }, (_, i) => created(8 + i, `b${8 + i}`)))
      await waitFor(() => delivered.length === 73, 20_000)
      expect(delivered.slice(3).map((e) => e.seq)).toEqual(Array.from({ length: 70 }, (_, i) => 9 + i))
      expect(a.counts.followRows).toBe(71)
      // And one whose events would not fit in a notification's payload (8000 bytes).
      await appendB([created(78, "x".repeat(5000)), created(79, "y".repeat(5000))])
      await waitFor(() => delivered.length === 75, 20_000)
      expect(delivered.slice(73).map((e) => `${e.seq}:${String(e.data.name)[0]}${String(e.data.name).length}`)).toEqual(["79:x5000", "80:y5000"])
      expect(a.counts.followRows).toBe(73)
      // A small one after them comes in its notification again.
      await appendB([created(80, "b80")])
      await waitFor(() => delivered.length === 76, 20_000)
      expect(delivered[75]).toMatchObject({ seq: 81, data: { name: "b80" } })
      expect(a.counts.followRows).toBe(73)
      // The limit is in bytes: 3,950 two-byte characters (7,900 bytes, with the JSON around them) do not fit; the
      // append is written all the same, and its event read.
      await appendB([created(81, "é".repeat(3950))])
      await waitFor(() => delivered.length === 77, 20_000)
      expect(String(delivered[76].data.name)).toBe("é".repeat(3950))
      expect(a.counts.followRows).toBe(74)
      await a.runtime.runPromise(Fiber.interrupt(follower))
    } finally {
      await a.runtime.dispose()
      await b.dispose()
    }
  })

  it("a follower that fell behind reads from the table only the commits its notifications did not carry", async () => {
    const store = await cluster.createDatabase("wo_cost_gap")
    const a = countedLog(store)
    const b = ManagedRuntime.make(postgresLogLayer(store))
    const delivered: Array<number> = []
    // The first chunk is held until the other commits have landed, and their notifications were heard: the follower
    // then stands behind all of them.
    let entered = 0
    let release: () => void = () => undefined
    const held = new Promise<void>((resolve) => (release = resolve))
    try {
      const follower = await a.runtime.runPromise(
        Effect.flatMap(EventLog, (log) =>
          Effect.forkDaemon(Stream.runForEachChunk(log.follow!(0, () => delivered.at(-1) ?? 0), (chunk) =>
            Effect.sync(() => void entered++).pipe(
              Effect.zipRight(Effect.promise(() => held)),
              Effect.zipRight(Effect.sync(() => void delivered.push(...Chunk.toReadonlyArray(chunk).map((e) => e.seq))))
            ))))
      )
      const appendB = appendOn(b)
      await listening(a.counts)
      await appendB([created(1, "small")])
      // Its notification or the poll brought it (a read then): counted from here on.
      await waitFor(() => entered === 1, 20_000)
      const rowsBefore = a.counts.followRows
      // Too large for a notification (70 events), then small again: kept from its notification, after the gap.
      await appendB(Array.from({ length: 70 }, (_, i) => created(2 + i, `large${i}`)))
      await appendB([created(72, "small again")])
      await waitFor(() => a.counts.heard === 72, 20_000)
      release()
      await waitFor(() => delivered.length === 72, 20_000)
      expect(delivered).toEqual(Array.from({ length: 72 }, (_, i) => i + 1))
      // Only the large commit came from the table.
      expect(a.counts.followRows - rowsBefore).toBe(70)
      await a.runtime.runPromise(Fiber.interrupt(follower))
    } finally {
      await a.runtime.dispose()
      await b.dispose()
    }
  })

  it("a node's follower sleeps through the node's own batches its writer applied (their answers and notifications wake nothing), and wakes for another node's", async () => {
    await onNewStore("wo_cost_wakes", (conn) => Effect.gen(function* () {
    const picture = makeLogPicture(0, [])
    const follow = yield* makeFollow(conn, "node-a", () => undefined)
    // The tailer's position: this node's own batches are applied by its writer right after their answer.
    let applied = 0
    const delivered: Array<number> = []
    yield* Effect.forkScoped(Stream.runForEachChunk(follow.events(0, () => applied), (chunk) =>
      Effect.sync(() => {
        for (const e of Chunk.toReadonlyArray(chunk)) delivered.push(e.seq)
        applied = Math.max(applied, ...Chunk.toReadonlyArray(chunk).map((e) => e.seq))
      })))
    // Started: listening, the log read once.
    yield* Effect.sleep(Duration.millis(500))
    const wakesAtStart = follow.cost.wakes
    const fetchesAtStart = follow.cost.fetches
    const own = 20
    for (let i = 1; i <= own; i++) {
      follow.sending(picture.head)
      const { result, last } = yield* appendPictured(conn, { entries: [created(i, `a${i}`)], counters: new Map() }, picture, "node-a")
      follow.wrote(result.lastSeq, last, result.lastSeq)
      applied = result.lastSeq
    }
    // Past the delay after which an own notification the append did not answer for counts.
    yield* Effect.sleep(Duration.millis(500))
    expect(delivered).toEqual([])
    expect(follow.cost.notifications).toBeGreaterThanOrEqual(own)
    // Each own batch woke the follower twice before (its answer, and a timer after it), for nothing.
    expect(follow.cost.wakes - wakesAtStart).toBeLessThanOrEqual(2)
    expect(follow.cost.fetches - fetchesAtStart).toBeLessThanOrEqual(2)

    // Another node's commit wakes it, and is delivered.
    const other = makeLogPicture(-1, []) // a head no log has: planned on the log as the function answers it
    yield* appendPictured(conn, { entries: [created(own + 1, "b")], counters: new Map() }, other, "node-b")
    yield* Effect.promise(() => waitFor(() => delivered.length === 1, 20_000))
    expect(delivered).toEqual([own + 1])
    expect(follow.cost.wakes - wakesAtStart).toBeGreaterThanOrEqual(1)
    }))
  })

  it("after the primary changes, a notification from the connection opened before only wakes the reader: its events are read from the table, and the connection is replaced", async () => {
    const database = "wo_cost_stale_listen"
    await onNewStore(database, (real) => Effect.gen(function* () {
    // The same server, with a generation the test moves: as if the node had switched to a new primary.
    let switched = 0
    const conn = { ...real, generation: () => real.generation() + switched }
    const follow = yield* makeFollow(conn, "node-a", () => undefined)
    const delivered: Array<number> = []
    yield* Effect.forkScoped(Stream.runForEachChunk(follow.events(0), (chunk) => Effect.sync(() => void delivered.push(...Chunk.toReadonlyArray(chunk).map((e) => e.seq)))))
    yield* Effect.sleep(Duration.millis(500))
    const other = makeLogPicture(-1, [])
    const appendB = (n: number) => appendPictured(conn, { entries: [created(n, `b${n}`)], counters: new Map() }, other, "node-b")

    /** The backend of the follower's LISTEN connection. */
    const listener = () => Effect.promise(() => cluster.sql(database, "select pid from pg_stat_activity where datname = $1 and query like 'listen %'", [database]))
    yield* appendB(1)
    yield* Effect.promise(() => waitFor(() => delivered.length === 1, 20_000))
    expect(follow.cost.pushed).toBe(1)
    const before = yield* listener()
    expect(before).toHaveLength(1)

    switched = 1
    const fetches = follow.cost.fetches
    yield* appendB(2)
    yield* Effect.promise(() => waitFor(() => delivered.length === 2, 20_000))
    // Heard on the connection opened before the switch: read from the table, not taken from it.
    expect(follow.cost.pushed).toBe(1)
    expect(follow.cost.fetches).toBeGreaterThan(fetches)

    // The connection was replaced (opened at the new generation): the next commit's events are taken again.
    yield* Effect.sleep(Duration.millis(1000))
    const after = yield* listener()
    expect(after).toHaveLength(1)
    expect(after[0].pid).not.toBe(before[0].pid)
    yield* appendB(3)
    yield* Effect.promise(() => waitFor(() => delivered.length === 3, 20_000))
    expect(delivered).toEqual([1, 2, 3])
    expect(follow.cost.pushed).toBe(2)
    }))
  })

  it("events a notification carries that do not verify are read from the table instead, and the table's are delivered", async () => {
    const database = "wo_cost_forged"
    await onNewStore(database, (conn) => Effect.gen(function* () {
    const follow = yield* makeFollow(conn, "node-a", () => undefined)
    const delivered: Array<StoredEvent> = []
    yield* Effect.forkScoped(Stream.runForEachChunk(follow.events(0), (chunk) => Effect.sync(() => void delivered.push(...Chunk.toReadonlyArray(chunk)))))
    yield* Effect.sleep(Duration.millis(500))
    const fetchesBefore = follow.cost.fetches
    // A notification of seq 1 with an event whose checksum is wrong (nothing is in the table yet).
    const forged = JSON.stringify([["1", "items", "1", 1, "created", 1, "1", null, null, JSON.stringify({ name: "forged" }), "0".repeat(16), null, null, null]])
    yield* Effect.promise(() => cluster.sql(database, `select pg_notify('writeonce_log', '1 node-x ' || $1)`, [forged]))
    yield* Effect.promise(() => waitFor(() => follow.cost.fetches > fetchesBefore, 20_000))
    yield* Effect.sleep(Duration.millis(200))
    expect(delivered).toEqual([])
    expect(follow.cost.pushed).toBe(0)

    // The real commit of seq 1: delivered as written (from its own notification).
    yield* appendPictured(conn, { entries: [created(1, "real")], counters: new Map() }, makeLogPicture(-1, []), "node-b")
    yield* Effect.promise(() => waitFor(() => delivered.length === 1, 20_000))
    expect(delivered[0]).toMatchObject({ seq: 1, id: "1", data: { name: "real" } })
    expect(follow.cost.pushed).toBe(1)
    }))
  })
})
