/**
 * Mixed write traffic against the blog app (creates, updates and deletes over REST, legacy MCP and modern MCP,
 * N in flight), with a client-side model of every acknowledged result, and the checks that hold it against the
 * log of a stopped server and against the restarted server.
 *
 * Each worker owns its rows (those it created, and at the start of a run those whose id mod N is its number), so a
 * row never has more than one write in flight: after a crash, a row
 * is either at its acknowledged version, or one past it when the write in flight at the crash turned out to be
 * durable (its event then carries exactly that write's payload, and the model adopts it).
 */
import { MCP_HEADERS, rpc } from "./legacy-client.ts"
import { modernCall } from "./modern-client.ts"
import { canonical, eventsByRow, type RowJson, type StoreSnapshot } from "./log-reader.ts"
import { http } from "./server.ts"

export type Transport = "rest" | "legacy" | "modern"
type Kind = "create" | "update" | "delete"
type Fields = Record<string, unknown>

interface Write {
  readonly kind: Kind
  readonly data: Fields
}

interface ModelRow {
  readonly id: string
  version: number
  deleted: boolean
  fields: Fields
  /** Acknowledged writes by version: what the log must hold at that version. */
  readonly acked: Map<number, Write>
  /** The write in flight when the server went away (outcome unknown). */
  pending?: Write
}

/** A small seeded PRNG (mulberry32), so that a failing run can be told apart by its seed. */
export const prng = (seed: number) => {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return { next, int: (n: number) => Math.floor(next() * n), pick: <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(next() * xs.length)] }
}
export type Prng = ReturnType<typeof prng>

export interface Refusal {
  readonly transport: Transport
  readonly kind: Kind
  readonly status: number
  readonly message: string
}

export class WriteModel {
  readonly rows = new Map<string, ModelRow>()
  /** Creates whose outcome is unknown (the connection closed before an answer). */
  pendingCreates: Array<Fields> = []
  ackedWrites = 0
  /** Answers that were clear refusals (JSON error, isError result, JSON-RPC error). */
  readonly refusals: Array<Refusal> = []
  /** Answers that were neither a success nor a clear error: always a failure. */
  readonly unclear: Array<string> = []
  /** Requests whose connection failed before an answer. */
  connectionErrors = 0
  /** Successful answers that disagree with the model (e.g. a version that skipped). */
  readonly answerProblems: Array<string> = []

  live() {
    return [...this.rows.values()].filter((r) => !r.deleted)
  }
}

let serial = 0
const word = (r: Prng) => Math.floor(r.next() * 36 ** 6).toString(36)

const newArticle = (r: Prng, tag: string): Fields => ({
  title: `t-${tag}-${++serial}`,
  body: `${word(r)} ${word(r)} ${"é✓".repeat(r.int(3))}`,
  status: r.pick(["draft", "published"]),
  tags: Array.from({ length: r.int(3) }, () => word(r)),
  author: r.next() < 0.5 ? { name: word(r) } : { name: word(r), email: `${word(r)}@example.com` }
})

const newPatch = (r: Prng, tag: string): Fields => {
  const patch: Fields = { title: `u-${tag}-${++serial}` }
  if (r.next() < 0.3) patch.status = r.pick(["draft", "published"])
  if (r.next() < 0.3) patch.tags = [word(r)]
  if (r.next() < 0.2) patch.body = word(r)
  return patch
}

type Answer =
  | { readonly _tag: "ok"; readonly body: any }
  | { readonly _tag: "refused"; readonly status: number; readonly message: string }
  | { readonly _tag: "unclear"; readonly detail: string }

const fromRest = (res: { status: number; json: any; text: string }): Answer => {
  if (res.status >= 200 && res.status < 300 && res.json?.id !== undefined) return { _tag: "ok", body: res.json }
  if (res.status >= 400 && typeof res.json?.error === "string" && typeof res.json?.message === "string") {
    return { _tag: "refused", status: res.status, message: `${res.json.error}: ${res.json.message}` }
  }
  return { _tag: "unclear", detail: `REST ${res.status} ${res.text.slice(0, 200)}` }
}

const fromMcp = (res: { status: number; json: any; text: string }): Answer => {
  const result = res.json?.result
  if (res.status === 200 && result !== undefined) {
    if (result.isError === true) {
      const text = result.content?.[0]?.text
      return typeof text === "string" && text.length > 0
        ? { _tag: "refused", status: 200, message: `isError: ${text}` }
        : { _tag: "unclear", detail: `isError without a message: ${res.text.slice(0, 200)}` }
    }
    if (result.structuredContent?.id !== undefined) return { _tag: "ok", body: result.structuredContent }
  }
  const error = res.json?.error
  if (error !== undefined && typeof error.code === "number" && typeof error.message === "string") {
    return { _tag: "refused", status: res.status, message: `JSON-RPC ${error.code}: ${error.message}` }
  }
  return { _tag: "unclear", detail: `MCP ${res.status} ${res.text.slice(0, 200)}` }
}

/** Sends one write; throws when the connection fails (outcome unknown). */
const send = async (url: string, transport: Transport, kind: Kind, id: string | undefined, data: Fields): Promise<Answer> => {
  if (transport === "rest") {
    const res = kind === "create"
      ? await http(`${url}/api/articles`, { method: "POST", body: data })
      : kind === "update"
      ? await http(`${url}/api/articles/${id}`, { method: "PATCH", body: data })
      : await http(`${url}/api/articles/${id}`, { method: "DELETE" })
    return fromRest(res)
  }
  const tool = `articles_${kind}`
  const args = kind === "create" ? data : kind === "update" ? { id, ...data } : { id }
  const res = transport === "legacy" ? await rpc(url, "tools/call", { name: tool, arguments: args }) : await modernCall(url, tool, args)
  return fromMcp(res)
}

export interface TrafficOptions {
  readonly url: string
  readonly model: WriteModel
  readonly inFlight: number
  readonly random: Prng
  /** Makes payloads unique per run. */
  readonly tag: string
  readonly stop: () => boolean
  /** Called after each acknowledged write has been recorded in the model (e.g. to act at the Nth ack). */
  readonly onAck?: () => void
}

/**
 * Runs `inFlight` workers until `stop()` or until their connection fails. Refusals are recorded and the worker
 * goes on; a connection failure leaves the write pending and ends the worker.
 */
export const runTraffic = async ({ url, model, inFlight, random: r, tag, stop, onAck }: TrafficOptions) => {
  const owned = Array.from({ length: inFlight }, () => [] as Array<ModelRow>)
  for (const row of model.live()) owned[Number(row.id) % inFlight].push(row)
  const worker = async (w: number) => {
    const mine = owned[w]
    while (!stop()) {
      const transport = r.pick<Transport>(["rest", "rest", "legacy", "modern"])
      const roll = r.next()
      const kind: Kind = mine.length < 2 || roll < 0.3 ? "create" : roll < 0.88 ? "update" : "delete"
      const target = kind === "create" ? undefined : mine[r.int(mine.length)]
      const data = kind === "create" ? newArticle(r, tag) : kind === "update" ? newPatch(r, tag) : {}
      if (target) target.pending = { kind, data }
      let answer: Answer
      try {
        answer = await send(url, transport, kind, target?.id, data)
      } catch {
        model.connectionErrors++
        if (kind === "create") model.pendingCreates.push(data)
        return
      }
      if (target) target.pending = undefined
      if (answer._tag === "refused") {
        model.refusals.push({ transport, kind, status: answer.status, message: answer.message })
        continue
      }
      if (answer._tag === "unclear") {
        model.unclear.push(`${transport} ${kind}: ${answer.detail}`)
        continue
      }
      const body = answer.body
      model.ackedWrites++
      if (kind === "create") {
        const id = String(body.id)
        if (body.version !== 1) model.answerProblems.push(`create of ${id} answered version ${body.version}`)
        if (model.rows.has(id)) model.answerProblems.push(`create answered an id already in use: ${id}`)
        const row: ModelRow = { id, version: 1, deleted: false, fields: data, acked: new Map([[1, { kind, data }]]) }
        model.rows.set(id, row)
        // The creator owns the row for the rest of this run; the next run deals rows out by id.
        mine.push(row)
        onAck?.()
        continue
      }
      const row = target!
      if (body.version !== row.version + 1) model.answerProblems.push(`${kind} of ${row.id} answered version ${body.version}, model had ${row.version}`)
      row.version = body.version
      row.acked.set(row.version, { kind, data })
      if (kind === "update") row.fields = { ...row.fields, ...data }
      else {
        row.deleted = true
        mine.splice(mine.indexOf(row), 1)
      }
      onAck?.()
    }
  }
  await Promise.all(Array.from({ length: inFlight }, (_, w) => worker(w)))
}

const sameWrite = (event: { kind: string; data: Record<string, unknown> }, write: Write) =>
  event.kind === (write.kind === "create" ? "created" : write.kind === "update" ? "updated" : "deleted") &&
  canonical(event.data) === canonical(write.data)

export interface Reconciliation {
  /** Acknowledged writes checked against the log (all of them, every time). */
  readonly checked: number
  /** Acknowledged writes missing from the log or different there: must be 0. */
  readonly lost: number
  /** Writes whose answer never arrived but which turned out durable (allowed, adopted into the model). */
  readonly adopted: number
  readonly problems: ReadonlyArray<string>
}

/**
 * Holds the model against the log of a stopped server: every acknowledged write is in the log at exactly its
 * version with exactly its payload; a row's last version is its acknowledged one, or one more when its write in
 * flight became durable; a row nobody was told about must be an unanswered create. Adopts those and clears
 * every pending write.
 */
export const reconcile = (model: WriteModel, snapshot: StoreSnapshot, type = "articles"): Reconciliation => {
  const problems: Array<string> = []
  const byRow = eventsByRow(snapshot.events)
  let checked = 0
  let lost = 0
  let adopted = 0
  for (const row of model.rows.values()) {
    const events = byRow.get(`${type}/${row.id}`) ?? []
    for (const [version, write] of row.acked) {
      checked++
      const event = events[version - 1]
      if (event === undefined || !sameWrite(event, write)) {
        lost++
        problems.push(`LOST: acknowledged ${write.kind} of ${type}/${row.id} v${version} ${canonical(write.data)}; log has ${event ? canonical(event) : "nothing"}`)
      }
    }
    const last = events.length
    if (last === row.version + 1 && row.pending !== undefined && sameWrite(events[last - 1], row.pending)) {
      adopted++
      row.version = last
      if (row.pending.kind === "update") row.fields = { ...row.fields, ...row.pending.data }
      if (row.pending.kind === "delete") row.deleted = true
      row.acked.set(last, row.pending)
    } else if (last !== row.version) {
      problems.push(`${type}/${row.id}: log at v${last}, acknowledged v${row.version}${row.pending ? ` (pending ${row.pending.kind})` : ""}`)
    }
    row.pending = undefined
  }
  for (const [key, events] of byRow) {
    const [t, id] = key.split("/")
    if (t !== type || model.rows.has(id)) continue
    const created = events[0]
    const i = model.pendingCreates.findIndex((data) => sameWrite(created, { kind: "create", data }))
    if (i === -1 || events.length !== 1) {
      problems.push(`${key}: in the log, but no client created it (${canonical(created)})`)
      continue
    }
    model.pendingCreates.splice(i, 1)
    adopted++
    model.rows.set(id, { id, version: 1, deleted: false, fields: created.data, acked: new Map([[1, { kind: "create", data: created.data }]]) })
  }
  model.pendingCreates = []
  return { checked, lost, adopted, problems }
}

/** Every row the server lists equals the model's row (id, version, fields), and vice versa. */
export const verifyOverHttp = async (url: string, model: WriteModel, type = "articles"): Promise<Array<string>> => {
  const problems: Array<string> = []
  const served = new Map<string, RowJson>()
  let cursor: string | undefined
  do {
    const page = await http(`${url}/api/${type}?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)
    if (page.status !== 200) return [`GET /api/${type} answered ${page.status}`]
    for (const row of page.json.items) served.set(row.id, row)
    cursor = page.json.nextCursor
  } while (cursor)
  for (const row of model.rows.values()) {
    const got = served.get(row.id)
    if (row.deleted) {
      if (got !== undefined) problems.push(`${type}/${row.id}: deleted (acknowledged) but served ${canonical(got)}`)
      continue
    }
    const expected = canonical({ id: row.id, version: row.version, ...row.fields })
    if (got === undefined) problems.push(`${type}/${row.id}: acknowledged at v${row.version} but not served`)
    else if (canonical(got) !== expected) problems.push(`${type}/${row.id}: served ${canonical(got)}, expected ${expected}`)
    served.delete(row.id)
  }
  for (const id of served.keys()) problems.push(`${type}/${id}: served but unknown to every client`)
  return problems
}

/** One legacy request on a given session (the shared `rpc` helper uses its own session). */
export const sessionRequest = (url: string, session: string, method: string, params?: unknown, id = Math.floor(Math.random() * 1e9)) =>
  http(`${url}/mcp`, {
    method: "POST",
    headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" },
    body: { jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) }
  })
