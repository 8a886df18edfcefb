/**
 * The crash loop: the real `wo` binary on one persistent data dir, mixed write traffic with 32 in flight,
 * `kill -9` at a random moment, then the checks, cycle after cycle. Used by test/reliability/crash-loop.test.ts
 * (3 cycles) and scripts/crash-loop.ts (20 by default).
 *
 * The moment is drawn as a count, not a time: the kill comes right after the cycle's Nth acknowledged write,
 * with the other writes still in flight, so a loaded machine makes a cycle slower but never makes it do less.
 *
 * After each kill, before the restart:
 *  - the log read straight from classic-level is whole: seqs 1..n, each row's versions 1..n, checkpoint = last
 *    seq, stored rows = the fold (checkStore);
 *  - every acknowledged write is in the log at exactly its version with exactly its payload (reconcile);
 *  - `wo replay` exits 0 and replays exactly the events of the log.
 * After the restart:
 *  - the server lists exactly the model's rows at the model's versions (an acknowledged delete is gone);
 *  - the subscriber's notifications are exactly right. A legacy session subscribed, before the traffic, to some
 *    rows (existing ones and ids not created yet) and read its GET stream live until the kill; it then
 *    resumes on the restarted server with Last-Event-ID (its last id seen, or get-<head before the traffic>).
 *    SSE ids are get-<log seq>, so the ids it received live plus those replayed must be exactly the set of log
 *    seqs past the subscription start that touched a subscribed row: none missing, none twice, and none for a
 *    write that is not in the log. Every acknowledged write on a subscribed row is found in the log by
 *    (row, version) and its seq must be among them; that is the count reported as `notificationsChecked`.
 */
import * as path from "node:path"
import { openSession } from "./legacy-client.ts"
import { checkStore, readStore, type StoreSnapshot } from "./log-reader.ts"
import { openSse, type SseConnection } from "./sse.ts"
import { ROOT, runWo, spawnServer, tempDir, type SpawnedServer } from "./server.ts"
import { prng, reconcile, runTraffic, sessionRequest, verifyOverHttp, WriteModel } from "./write-traffic.ts"

export interface CrashLoopOptions {
  readonly cycles: number
  readonly inFlight?: number
  /** The kill comes right after the Nth acknowledged write of the cycle, N uniformly random in [minAcks, maxAcks]. */
  readonly minAcks?: number
  readonly maxAcks?: number
  readonly seed?: number
  readonly dataDir?: string
  readonly log?: (line: string) => void
}

export interface CycleReport {
  readonly cycle: number
  /** The acknowledged writes of this cycle after which the server was killed. */
  readonly killAtAcks: number
  /** How long the traffic ran before the kill (informational: it depends on the machine). */
  readonly trafficMs: number
  readonly ackedThisCycle: number
  readonly events: number
  readonly lost: number
  readonly adopted: number
  readonly notificationsChecked: number
}

export interface CrashLoopReport {
  readonly seed: number
  readonly dataDir: string
  readonly cycles: ReadonlyArray<CycleReport>
  readonly ackedWrites: number
  /** Checks of acknowledged writes against the log, summed over cycles (each write is re-checked every cycle). */
  readonly checks: number
  readonly lost: number
  readonly notificationsChecked: number
  readonly problems: ReadonlyArray<string>
}

const BLOG = path.join(ROOT, "examples/blog")

interface Subscriber {
  readonly session: string
  readonly uris: ReadonlySet<string>
  readonly since: number
  readonly received: Array<{ seq: number; uri: string }>
  lastId: string | undefined
  stream: SseConnection
  reading: Promise<void>
}

const parseSeq = (id: string | undefined) => (id !== undefined && /^get-\d+$/.test(id) ? Number(id.slice(4)) : NaN)

/** Reads a GET stream into the subscriber until it ends; ids must be get-<seq>. */
const drain = (sub: Subscriber, problems: Array<string>, until?: () => boolean) =>
  (async () => {
    for (;;) {
      const m = await sub.stream.nextJson(500)
      if (m === undefined) {
        if (sub.stream.ended() || until?.()) return
        continue
      }
      const seq = parseSeq(m.id)
      if (Number.isNaN(seq) || m.json.method !== "notifications/resources/updated") {
        problems.push(`unexpected GET-stream message ${m.id} ${JSON.stringify(m.json)}`)
        continue
      }
      sub.received.push({ seq, uri: m.json.params.uri })
      sub.lastId = m.id
      if (until?.()) return
    }
  })()

const getStream = (url: string, session: string, lastEventId?: string) =>
  openSse(`${url}/mcp`, {
    headers: {
      accept: "text/event-stream",
      "mcp-session-id": session,
      "mcp-protocol-version": "2025-11-25",
      ...(lastEventId ? { "last-event-id": lastEventId } : {})
    }
  })

const subscribe = async (url: string, model: WriteModel, snapshot: StoreSnapshot | undefined, r: ReturnType<typeof prng>, problems: Array<string>): Promise<Subscriber> => {
  const since = snapshot?.events.length ?? 0
  const counter = snapshot?.counters.get("articles") ?? 0
  const live = model.live()
  const existing = Array.from({ length: Math.min(6, live.length) }, () => live[r.int(live.length)].id)
  const future = Array.from({ length: 6 }, (_, i) => String(counter + 1 + i * 3))
  const uris = new Set([...existing, ...future].map((id) => `wo://articles/${id}`))
  const session = await openSession(url)
  for (const uri of uris) {
    const res = await sessionRequest(url, session, "resources/subscribe", { uri })
    if (res.status !== 200 || res.json?.result === undefined) problems.push(`subscribe ${uri}: ${res.status} ${res.text}`)
  }
  const stream = await getStream(url, session)
  if (stream.status !== 200) problems.push(`GET stream: ${stream.status}`)
  const sub: Subscriber = { session, uris, since, received: [], lastId: undefined, stream, reading: Promise.resolve() }
  sub.reading = drain(sub, problems)
  return sub
}

/** Resumes the subscriber on the restarted server and compares what it got with the log. */
const checkNotifications = async (url: string, sub: Subscriber, model: WriteModel, snapshot: StoreSnapshot, problems: Array<string>) => {
  const expected = new Map<number, string>()
  for (const e of snapshot.events) {
    const uri = `wo://${e.type}/${e.id}`
    if (e.seq > sub.since && sub.uris.has(uri)) expected.set(e.seq, uri)
  }
  const liveCount = sub.received.length
  sub.stream = await getStream(url, sub.session, sub.lastId ?? `get-${sub.since}`)
  if (sub.stream.status !== 200) problems.push(`resumed GET stream: ${sub.stream.status}`)
  const deadline = Date.now() + 10_000
  await drain(sub, problems, () => sub.received.length >= expected.size || Date.now() > deadline)
  // Anything more that arrives soon after would be a duplicate or a notice for a write not in the log.
  const extra = await sub.stream.nextJson(300)
  if (extra !== undefined) problems.push(`extra notification after resumption: ${extra.id} ${JSON.stringify(extra.json)}`)
  sub.stream.close()

  const seen = new Map<number, string>()
  for (const { seq, uri } of sub.received) {
    if (seen.has(seq)) problems.push(`notification get-${seq} delivered twice`)
    seen.set(seq, uri)
    if (expected.get(seq) !== uri) problems.push(`notification get-${seq} for ${uri}: the log has ${expected.has(seq) ? expected.get(seq) : "no such write on a subscribed row"}`)
  }
  for (const [seq, uri] of expected) if (!seen.has(seq)) problems.push(`missing notification get-${seq} for ${uri} (live ${liveCount}, resumed after ${sub.lastId})`)

  // The acknowledged writes on subscribed rows, located in the log by (row, version).
  const seqOf = new Map(snapshot.events.map((e) => [`${e.type}/${e.id}@${e.version}`, e.seq]))
  let checked = 0
  for (const row of model.rows.values()) {
    if (!sub.uris.has(`wo://articles/${row.id}`)) continue
    for (const version of row.acked.keys()) {
      const seq = seqOf.get(`articles/${row.id}@${version}`)
      if (seq === undefined || seq <= sub.since) continue
      checked++
      if (!seen.has(seq)) problems.push(`no notification for the acknowledged write articles/${row.id} v${version} (seq ${seq})`)
    }
  }
  return checked
}

/** Runs the loop; never throws for a failed check (they are in `problems`), only when the harness itself breaks. */
export const runCrashLoop = async (options: CrashLoopOptions): Promise<CrashLoopReport> => {
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31)
  const r = prng(seed)
  const inFlight = options.inFlight ?? 32
  const minAcks = options.minAcks ?? 40
  const maxAcks = options.maxAcks ?? 400
  const log = options.log ?? (() => {})
  const dataDir = options.dataDir ?? tempDir("wo-crash-")
  const model = new WriteModel()
  const problems: Array<string> = []
  const cycles: Array<CycleReport> = []
  let snapshot: StoreSnapshot | undefined
  let checks = 0
  let lost = 0
  let notificationsChecked = 0
  let server: SpawnedServer = await spawnServer(BLOG, dataDir)
  try {
    for (let cycle = 1; cycle <= options.cycles; cycle++) {
      const url = server.url
      const ackedBefore = model.ackedWrites
      const sub = await subscribe(url, model, snapshot, r, problems)
      let stop = false
      const killAtAcks = minAcks + r.int(maxAcks - minAcks + 1)
      let reached!: () => void
      const enough = new Promise<void>((resolve) => (reached = resolve))
      const started = Date.now()
      const traffic = runTraffic({
        url,
        model,
        inFlight,
        random: r,
        tag: `${seed}-${cycle}`,
        stop: () => stop,
        onAck: () => {
          if (model.ackedWrites - ackedBefore >= killAtAcks) reached()
        }
      })
      // Kill at the Nth acknowledgement; if every worker ends first (the server stopped answering), kill anyway:
      // the cycle then reports fewer acknowledged writes than killAtAcks, which the test rejects.
      await Promise.race([enough, traffic])
      const trafficMs = Date.now() - started
      await server.stop("SIGKILL")
      stop = true
      await traffic
      await sub.reading
      sub.stream.close()

      snapshot = await readStore(dataDir)
      problems.push(...checkStore(snapshot).map((p) => `cycle ${cycle}: log: ${p}`))
      const rec = reconcile(model, snapshot)
      checks += rec.checked
      lost += rec.lost
      problems.push(...rec.problems.map((p) => `cycle ${cycle}: ${p}`))

      const replayed = await runWo(["replay", dataDir])
      if (replayed.code !== 0) problems.push(`cycle ${cycle}: wo replay exited ${replayed.code}: ${replayed.stderr}`)
      if (!replayed.stdout.includes(`replayed ${snapshot.events.length} events`)) problems.push(`cycle ${cycle}: wo replay said ${replayed.stdout}`)

      server = await spawnServer(BLOG, dataDir)
      problems.push(...(await verifyOverHttp(server.url, model)).map((p) => `cycle ${cycle}: served: ${p}`))
      const notified = await checkNotifications(server.url, sub, model, snapshot, problems)
      notificationsChecked += notified

      const report: CycleReport = {
        cycle,
        killAtAcks,
        trafficMs,
        ackedThisCycle: model.ackedWrites - ackedBefore,
        events: snapshot.events.length,
        lost: rec.lost,
        adopted: rec.adopted,
        notificationsChecked: notified
      }
      cycles.push(report)
      log(`cycle ${cycle}: killed at ack ${killAtAcks}, after ${trafficMs} ms; ${report.ackedThisCycle} writes acknowledged (${model.ackedWrites} in all), ` +
        `${report.events} events in the log, ${rec.lost} lost, ${rec.adopted} unanswered but durable, ${notified} notifications checked`)
    }
  } finally {
    await server.stop("SIGTERM")
  }
  problems.push(...model.unclear.map((u) => `unclear answer: ${u}`), ...model.answerProblems)
  // Nothing was refused: each row has a single writer and the store never failed.
  problems.push(...model.refusals.map((f) => `unexpected refusal: ${f.transport} ${f.kind} ${f.status} ${f.message}`))
  return { seed, dataDir, cycles, ackedWrites: model.ackedWrites, checks, lost, notificationsChecked, problems }
}
