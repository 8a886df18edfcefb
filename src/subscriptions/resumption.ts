/**
 * Legacy resumption: the notices a session's stream missed, recomputed from the durable log, in the order
 * the registry sends them live (see registry.ts): by log sequence, the row's own notice first, then the
 * others by URI. A position is the last notice delivered: its sequence, and its URI unless it was a row's.
 *
 *  - A row URI: every event of the row after the position.
 *  - A view URI: one notice at the view's last change, if that is after the position (a view's missed changes
 *    are announced once: the client re-reads the value).
 *  - A live query: every event whose row matched the query's filters before it or matches them after (the rows'
 *    filtered fields before the window are read back from the log).
 *
 * Other requests are served meanwhile: every read of the log decodes a slice of `SLICE` events at a time, and
 * passes the turnstile for long work (turnstile.ts) after each, as `/api/_events` catch-up does.
 */
import { Chunk, Effect, Either, Stream } from "effect"
import type { EventLogShape } from "../log/event-log.ts"
import type { CompiledApp } from "../domain/compile.ts"
import type { StoreError } from "../domain/errors.ts"
import { streamKey, type StoredEvent } from "../domain/events.ts"
import { matchesAll } from "../domain/list-request.ts"
import { historyUri, parseUri, rowUri } from "../domain/uri.ts"
import { longWork } from "../support/turnstile.ts"
import type { HeldTopic, LiveQuery } from "./live-queries.ts"

export interface ResumePosition {
  readonly seq: number
  /** The URI of the last notice delivered, when it was not the row's own (several notices share a seq). */
  readonly uri?: string
}

export interface ResumedNotice {
  readonly uri: string
  readonly seq: number
}

/** The filtered fields' values of one row (null: the row does not exist). */
type Partial = Record<string, unknown> | null

const FIRST_CHUNK = 1024
/** Events decoded per step, between two turns of the event loop (as `/api/_events` catch-up: event-tail.ts BATCH). */
export const SLICE = 128

const fieldsOf = (event: StoredEvent, catalog: CompiledApp): Record<string, unknown> => {
  if (event.kind !== "created") return event.data
  // A create holds every field; old ones may lack a field added since with a default, which the live row has.
  const type = catalog.types.get(event.type)
  return type === undefined ? event.data : Either.getOrElse(type.normalise(event.data), () => event.data)
}

/**
 * The notices after `from`, up to `head` included, for the subscriptions (URI -> its topic, as read when it came
 * in, and the sequence it began at; only later changes count). `viewSeqs` is each view's last change as of `head`
 * (read together with it). No URI is parsed again: a live query's filters travel in its topic.
 */
export const resumeNotices = (
  log: EventLogShape,
  catalog: CompiledApp,
  subscriptions: ReadonlyMap<string, HeldTopic>,
  from: ResumePosition,
  head: number,
  viewSeqs: ReadonlyMap<string, number>
): Stream.Stream<ResumedNotice, StoreError> => {
  if (from.seq >= head && from.uri === undefined) return Stream.empty
  const liveByType = new Map<string, Array<LiveQuery & { readonly since: number }>>()
  const views: Array<{ readonly uri: string; readonly seq: number }> = []
  for (const [uri, { topic, since }] of subscriptions) {
    if (topic.query !== undefined) {
      const list = liveByType.get(topic.query.type) ?? []
      list.push({ ...topic.query, since })
      liveByType.set(topic.query.type, list)
    } else {
      // A view's URI is a key of viewSeqs; a row's is looked up per event below.
      const seq = viewSeqs.get(uri)
      if (seq !== undefined && seq > since && seq >= from.seq && seq <= head) views.push({ uri, seq })
    }
  }
  /** The log from `seq` on, a slice at a time, each slice after a turn of the turnstile. */
  const read = (seq: number) => log.readFrom(seq, { slice: SLICE }).pipe(Stream.mapChunksEffect((events) => Effect.as(longWork.pass, events)))
  const window = () => read(Math.max(1, from.seq)).pipe(Stream.takeWhile((e) => e.seq <= head))
  const after = (seq: number, uri: string, own: boolean) =>
    seq > from.seq || (seq === from.seq && !own && (from.uri === undefined || uri > from.uri))

  // Live queries need each touched row's filtered fields as they were before the window (a row created inside the
  // window has none).
  const trackedFields = new Map([...liveByType].map(([type, queries]) => [type, new Set(queries.flatMap((q) => q.where.map((f) => f.field)))]))
  const states = new Map<string, Partial>()
  const prepare = liveByType.size === 0 ? Effect.void : Effect.gen(function* () {
    const unknown = new Map<string, { readonly type: string; readonly missing: Set<string>; readonly values: Record<string, unknown> }>()
    yield* window().pipe(Stream.runForEach((event) =>
      Effect.sync(() => {
        const fields = trackedFields.get(event.type)
        const key = streamKey(event.type, event.id)
        if (fields === undefined || states.has(key) || unknown.has(key)) return
        if (event.kind === "created") states.set(key, null)
        else unknown.set(key, { type: event.type, missing: new Set(fields), values: {} })
      })))
    // Backwards from the window, in growing chunks, until every unknown field is known: at the row's create at the
    // latest.
    let end = Math.max(1, from.seq)
    let size = FIRST_CHUNK
    const open = new Set(unknown.keys())
    while (open.size > 0 && end > 1) {
      const start = Math.max(1, end - size)
      const chunk = Chunk.toReadonlyArray(yield* Stream.runCollect(read(start).pipe(Stream.takeWhile((e) => e.seq < end))))
      for (let i = chunk.length - 1; i >= 0 && open.size > 0; i--) {
        const event = chunk[i]
        const key = streamKey(event.type, event.id)
        const entry = unknown.get(key)
        if (entry === undefined || entry.missing.size === 0) continue
        const fields = fieldsOf(event, catalog)
        for (const f of [...entry.missing]) {
          if (event.kind === "created" || f in fields) {
            entry.values[f] = fields[f]
            entry.missing.delete(f)
          }
        }
        if (entry.missing.size === 0) open.delete(key)
      }
      end = start
      size *= 2
    }
    for (const [key, entry] of unknown) states.set(key, entry.values)
  })

  const notices = window().pipe(
    Stream.mapConcat((event): ReadonlyArray<ResumedNotice> => {
      const out: Array<ResumedNotice> = []
      const own = rowUri(event.type, event.id)
      const ownSince = subscriptions.get(own)?.since
      if (ownSince !== undefined && event.seq > ownSince && after(event.seq, own, true)) out.push({ uri: own, seq: event.seq })
      const others: Array<string> = []
      const queries = liveByType.get(event.type)
      if (queries !== undefined) {
        const key = streamKey(event.type, event.id)
        const before = states.get(key) ?? null
        const next: Partial = event.kind === "deleted" ? null : { ...(event.kind === "created" ? {} : before ?? {}), ...fieldsOf(event, catalog) }
        states.set(key, next)
        for (const q of queries) {
          if (event.seq > q.since && (matchesAll(q.where, before) || matchesAll(q.where, next))) others.push(q.uri)
        }
      }
      for (const v of views) if (v.seq === event.seq) others.push(v.uri)
      const historySince = subscriptions.size === 0 ? undefined : subscriptions.get(historyUri(event.type, event.id))?.since
      if (historySince !== undefined && event.seq > historySince) others.push(historyUri(event.type, event.id))
      others.sort()
      for (const uri of others) if (after(event.seq, uri, false)) out.push({ uri, seq: event.seq })
      return out
    })
  )
  return Stream.unwrap(Effect.as(prepare, notices))
}

/** Parses `get-<seq>` and `get-<seq>.<base64url URI>` (see http/mcp/session-stream.ts); undefined for anything else. */
export const parsePosition = (text: string | undefined): ResumePosition | undefined => {
  const m = text === undefined ? null : /^get-(\d{1,15})(?:\.([A-Za-z0-9_-]+))?$/.exec(text.trim())
  if (m === null) return undefined
  return m[2] === undefined ? { seq: Number(m[1]) } : { seq: Number(m[1]), uri: Buffer.from(m[2], "base64url").toString("utf8") }
}

/** The SSE id of a notice on a legacy GET stream: the row's own is `get-<seq>`, any other names its URI too. */
export const positionId = (seq: number, uri: string) =>
  parseUri(uri)?._tag === "Row" ? `get-${seq}` : `get-${seq}.${Buffer.from(uri, "utf8").toString("base64url")}`
