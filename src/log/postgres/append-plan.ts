/**
 * The plan of one batch against a picture of the shared log, pure (no database): the seqs it takes, the id each
 * create gets (its own when the store handed it out and no row has it: a node's block of ids; else the next past
 * the type's last id handed out), which entries are left out (`Duplicate`: their key is stored; `Stale`: decided against a row that
 * moved on, referencing a row that is gone or deleting one still referenced, or an app command's group that cannot
 * be written whole), and the append function's arguments that write it (schema.ts). append.ts sends it and plans
 * again when the function answers that the log is otherwise.
 */
import type { Row } from "../../domain/catalog.ts"
import { streamKey, type StoredEvent } from "../../domain/events.ts"
import { isCanonicalId } from "../../domain/ids.ts"
import { Duplicate, isWritten, Stale, type AppendBatch, type AppendEntry, type AppendResult, type StoredKey } from "../event-log.ts"
import { keyPayload } from "../key-record.ts"
import type { Counts, LogPicture } from "./log-picture.ts"
import { checksum, eventColumns, idempotencyKeyOf, rowKey, rowPayload, viewKey } from "./records.ts"

/** What a batch is planned against: the log as the function answered it, or as this node expects it. */
export interface LogState {
  readonly head: number
  /** The batch's idempotency keys that are stored. */
  readonly keys: ReadonlyMap<string, StoredKey>
  /** Stored version per entity (`streamKey`) the batch updates or deletes; 0: never written. */
  readonly versions: ReadonlyMap<string, number>
  /**
   * Per type the batch creates or deletes in: the highest id handed out (to a create or in a block) and the live row
   * count (as far as known: the store moves it by the batch's delta, never checks it); absent: none yet.
   */
  readonly counts: ReadonlyMap<string, Counts>
  /** Of the batch's creates (`streamKey`), those whose id a row has already. */
  readonly taken?: ReadonlySet<string>
  /** Of the rows the batch references (`streamKey`), those that are not live (absent: none known). */
  readonly missing?: ReadonlySet<string>
  /** Of the rows the batch deletes (`streamKey`), those a live row written after the batch's decision references. */
  readonly referenced?: ReadonlySet<string>
}

/** The entities (non-creates) a batch checks versions of, and the types whose counters it moves. */
export const touchedBy = (batch: AppendBatch) => {
  const entities = new Map<string, { type: string; id: string; decidedOn: number }>()
  const types = new Set<string>()
  for (const { event } of batch.entries) {
    if (event.kind !== "created") {
      const key = streamKey(event.type, event.id)
      if (!entities.has(key)) entities.set(key, { type: event.type, id: event.id, decidedOn: event.version - 1 })
    }
    if (event.kind === "created" || event.kind === "deleted") types.add(event.type)
  }
  return { entities, types }
}

export type Touched = ReturnType<typeof touchedBy>

/** The log as this node expects it: its picture, the versions the batch was decided on, no key stored yet. */
export const expected = (picture: LogPicture, touched: Touched): LogState => {
  const counts = new Map<string, Counts>()
  for (const type of touched.types) {
    const c = picture.counts.get(type)
    if (c !== undefined) counts.set(type, { ...c })
  }
  const versions = new Map<string, number>()
  for (const [key, e] of touched.entities) versions.set(key, e.decidedOn)
  return { head: picture.head, keys: new Map(), versions, counts }
}

/** The batch planned against `state`: every entry's outcome, and the function's arguments that write it. */
export const plan = (batch: AppendBatch, state: LogState, touched: Touched, tag: string) => {
  const entries = batch.entries
  const head = state.head
  const claims = batch.keys ?? []
  const replays = new Map<string, StoredKey>()
  const duplicates = new Set<number>()
  for (const c of claims) {
    const stored = state.keys.get(c.key)
    if (stored === undefined) continue
    replays.set(c.key, stored)
    for (let i = c.first; i < c.first + c.count; i++) duplicates.add(i)
  }
  // Versions: one past the entity's stored version (0: never written), chained within the batch.
  const versions = new Map<string, number>()
  for (const key of touched.entities.keys()) versions.set(key, state.versions.get(key) ?? 0)
  const counts = new Map<string, Counts>()
  for (const type of touched.types) counts.set(type, { ...(state.counts.get(type) ?? { lastId: 0, rowCount: 0 }) })
  const references = referencesPlan(batch, state)
  // The creates planned so far (`streamKey`): an id is given once in a batch.
  const createdHere = new Set<string>()

  const ev = { seq: [] as Array<number>, type: [] as Array<string>, id: [] as Array<string>, version: [] as Array<number>, kind: [] as Array<string>, schema: [] as Array<number>, at: [] as Array<number>, method: [] as Array<string | null>, params: [] as Array<string | null>, data: [] as Array<string>, checksum: [] as Array<string>, command: [] as Array<string | null>, correlation: [] as Array<string | null>, actor: [] as Array<string | null> }
  // The row after the batch, per entity (the last entry wins: one upsert per row).
  const rowsAfter = new Map<string, { type: string; id: string; version: number; schema: number; row: string | null }>()
  const outcomes: Array<AppendEntry | Stale | Duplicate> = []
  // Entities whose chain in this batch is broken (an earlier entry was stale, or its create got another id).
  const broken = new Set<string>()
  let seq = head
  // An app command's entries (consecutive, one correlation) are one group: all of them are written, or none.
  for (let start = 0; start < entries.length;) {
    const correlation = entries[start].event.correlation
    let end = start + 1
    if (correlation !== undefined) while (end < entries.length && entries[end].event.correlation === correlation) end++
    const group = correlation !== undefined
    if (duplicates.has(start)) {
      // Answered with the stored key; later entries of its entities were decided on top of it: stale.
      for (let i = start; i < end; i++) {
        const { event } = entries[i]
        if (event.kind !== "created") broken.add(streamKey(event.type, event.id))
        outcomes.push(Duplicate)
      }
      start = end
      continue
    }
    // What a group changes, to undo it when one of its entries cannot be written (a single entry fails before it
    // changes anything: nothing to undo).
    const undo: Array<() => void> | undefined = group ? [] : undefined
    const seqBefore = seq
    const setVersion = (key: string, version: number) => {
      if (undo !== undefined) {
        const had = versions.has(key)
        const before = versions.get(key)
        undo.push(() => (had ? versions.set(key, before!) : versions.delete(key)))
      }
      versions.set(key, version)
    }
    const countOf = (type: string) => {
      const count = counts.get(type)!
      if (undo !== undefined) {
        const before = { ...count }
        undo.push(() => Object.assign(count, before))
      }
      return count
    }
    const written: Array<AppendEntry> = []
    let failed = false
    for (let i = start; i < end && !failed; i++) {
      let { event, row, rowJson } = entries[i]
      let key = streamKey(event.type, event.id)
      if (!references.allows(i, event)) {
        // It references a row that is gone, or deletes one still referenced: decided again, caught up, it is refused.
        failed = true
        break
      } else if (event.kind === "created" && event.version !== 1) {
        // A create decided against a row (a bug of the writer's): never write it.
        failed = true
        break
      } else if (event.kind === "created") {
        const count = countOf(event.type)
        // An id the store handed out (a node's block: at most the last id handed out) that no row has is kept; the
        // store checks both under its lock. Any other create gets the next id past the last one handed out.
        const n = Number(event.id)
        const handedOut = isCanonicalId(event.id) && n >= 1 && n <= count.lastId && state.taken?.has(key) !== true && !createdHere.has(key)
        const id = handedOut ? event.id : String(count.lastId + 1)
        if (id !== event.id) {
          if (group) {
            // The command was decided with other ids: it is decided again.
            failed = true
            break
          }
          broken.add(key)
          event = { ...event, id }
          row = row === null ? null : ({ ...row, id } as Row)
          rowJson = row === null ? null : JSON.stringify(row)
          key = streamKey(event.type, id)
        }
        if (!handedOut) count.lastId++
        count.rowCount++
        createdHere.add(key)
        undo?.push(() => createdHere.delete(key))
        setVersion(key, 0)
      } else if (broken.has(key) || event.version !== versions.get(key)! + 1) {
        failed = true
        break
      } else if (event.kind === "deleted") countOf(event.type).rowCount--
      setVersion(key, event.version)
      references.wrote(key, event.kind !== "deleted", undo)
      // The seq the writer decided it with, on a right picture: the same event (its change is then answered as is,
      // commit-mode.ts), not a copy per write.
      if (event.seq !== ++seq) event = { ...event, seq } satisfies StoredEvent
      const json = row === null ? null : rowJson ?? JSON.stringify(row)
      written.push({ event, row, rowJson: json })
    }
    if (failed) {
      if (undo !== undefined) for (let u = undo.length - 1; u >= 0; u--) undo[u]()
      references.dropGroup()
      seq = seqBefore
      for (let i = start; i < end; i++) {
        const { event } = entries[i]
        // Later entries of these entities were decided on top of this one: stale too.
        if (event.kind !== "created") broken.add(streamKey(event.type, event.id))
        outcomes.push(Stale)
      }
    } else {
      for (const entry of written) {
        const { event } = entry
        const c = eventColumns(event)
        ev.seq.push(c.seq), ev.type.push(c.type), ev.id.push(c.id), ev.version.push(c.version), ev.kind.push(c.kind)
        ev.schema.push(c.schema), ev.at.push(c.at), ev.method.push(c.method), ev.params.push(c.params), ev.data.push(c.data)
        ev.checksum.push(c.checksum), ev.command.push(c.command), ev.correlation.push(c.correlation), ev.actor.push(c.actor)
        rowsAfter.set(streamKey(event.type, event.id), { type: event.type, id: event.id, version: event.version, schema: event.schema ?? 1, row: entry.rowJson ?? null })
        outcomes.push(entry)
      }
      references.keepGroup()
    }
    start = end
  }
  // The keys of the submissions written, each with its entries as written (seqs and ids the log assigned).
  const keys = { key: [] as Array<string>, at: [] as Array<number>, result: [] as Array<string>, checksum: [] as Array<string> }
  for (const c of claims) {
    const written = outcomes.slice(c.first, c.first + c.count)
    if (written.length === 0 || !written.every(isWritten)) continue
    const result = keyPayload(c.fingerprint, c.at, written as ReadonlyArray<AppendEntry>)
    keys.key.push(c.key)
    keys.at.push(c.at)
    keys.result.push(result)
    keys.checksum.push(checksum(idempotencyKeyOf(c.key), result))
  }
  const rows = [...rowsAfter.values()]
  const types = [...counts]
  // The types given ids past their last id handed out: the store checks that it is still the one planned on.
  const nextIds = new Set<string>()
  for (const o of outcomes) {
    if (isWritten(o) && o.event.kind === "created" && Number(o.event.id) > (state.counts.get(o.event.type)?.lastId ?? 0)) nextIds.add(o.event.type)
  }
  const views = new Map((batch.views ?? []).map((v) => [v.name, v.json]))
  const entityKeys = [...touched.entities]
  const checks = [
    head,
    claims.map((c) => c.key),
    [...state.keys.keys()],
    entityKeys.map(([, e]) => e.type),
    entityKeys.map(([, e]) => e.id),
    entityKeys.map(([key]) => state.versions.get(key) ?? 0),
    [...touched.types],
    [...touched.types].map((t) => (nextIds.has(t) ? state.counts.get(t)?.lastId ?? 0 : null))
  ]
  const writes = [
    ev.seq, ev.type, ev.id, ev.version, ev.kind, ev.schema, ev.at, ev.method, ev.params, ev.data, ev.checksum, ev.command, ev.correlation, ev.actor,
    rows.map((r) => r.type),
    rows.map((r) => r.id),
    rows.map((r) => r.version),
    rows.map((r) => r.schema),
    rows.map((r) => r.row),
    rows.map((r) => checksum(rowKey(r.type, r.id), rowPayload(r.version, r.schema, r.row))),
    types.map(([type]) => type),
    types.map(([, c]) => c.lastId),
    // Moved by as many rows as the batch creates less those it deletes (other nodes' commits move it too).
    types.map(([type, c]) => c.rowCount - (state.counts.get(type)?.rowCount ?? 0)),
    [...views.keys()],
    [...views.values()],
    [...views].map(([name, json]) => checksum(viewKey(name), json)),
    keys.key,
    keys.at,
    keys.result,
    keys.checksum,
    seq,
    tag
  ]
  // Last, after the plan's own arguments: the references the store checks under the lock.
  const referenceChecks = references.args(batch.references?.decidedAt ?? 0)
  const n = ev.seq.length
  return {
    result: { outcomes, lastSeq: seq, ...(replays.size > 0 ? { replays } : {}) } satisfies AppendResult,
    args: [...checks, ...writes, ...referenceChecks],
    writes: seq !== head,
    counts,
    last: n === 0 ? undefined : { seq: ev.seq[n - 1], checksum: ev.checksum[n - 1] }
  }
}

export type Planned = ReturnType<typeof plan>

/**
 * A written batch's result, its seqs moved by `shift` (the function wrote it after other nodes' commits). Nothing
 * else of a shiftable batch names a seq: rows, ids, versions and counters are as planned.
 */
export const shifted = (planned: { readonly result: AppendResult; readonly last?: { readonly seq: number; readonly checksum: string } }, shift: number) =>
  shift === 0 ? planned : {
    result: {
      ...planned.result,
      outcomes: planned.result.outcomes.map((o) => (isWritten(o) ? { ...o, event: { ...o.event, seq: o.event.seq + shift } } : o)),
      lastSeq: planned.result.lastSeq + shift
    } satisfies AppendResult,
    ...(planned.last === undefined ? {} : { last: { seq: planned.last.seq + shift, checksum: planned.last.checksum } })
  }

const deleteKey = (type: string, id: string, byType: string, byField: string) => JSON.stringify([type, id, byType, byField])

/**
 * The references of a batch as planned: which of an entry's targets the batch itself writes (live or deleted by an
 * earlier entry) and which the store must hold live at commit, and which deletes the store must find unreferenced.
 * On a state answered by the function, an entry whose target is missing, or whose deleted row is referenced, is
 * left out. What a group asks of the store is kept only if the group is written (`keepGroup`).
 */
const referencesPlan = (batch: AppendBatch, state: LogState) => {
  const refs = batch.references
  const missing = state.missing
  const referenced = state.referenced
  // Entities written so far in the plan: true while live, false once deleted.
  const liveHere = new Map<string, boolean>()
  const targets = new Map<string, { type: string; id: string }>()
  const deletes: Array<{ type: string; id: string; byType: string; byField: string }> = []
  let groupTargets: Array<readonly [string, { type: string; id: string }]> = []
  let groupDeletes: Array<{ type: string; id: string; byType: string; byField: string }> = []
  return {
    /** Whether entry `i` may be written as far as references go; notes what the store must check. */
    allows: (i: number, event: StoredEvent): boolean => {
      if (refs === undefined) return true
      const to = refs.targets.get(i)
      if (to !== undefined) {
        for (const t of to) {
          const k = streamKey(t.type, t.id)
          const here = liveHere.get(k)
          if (here === false || (here === undefined && missing?.has(k) === true)) return false
          if (here === undefined) groupTargets.push([k, t])
        }
      }
      const incoming = event.kind === "deleted" ? refs.incoming.get(i) : undefined
      if (incoming !== undefined) {
        if (referenced?.has(streamKey(event.type, event.id)) === true) return false
        for (const by of incoming) groupDeletes.push({ type: event.type, id: event.id, byType: by.type, byField: by.field })
      }
      return true
    },
    /** Entity `key` is written (live or deleted) by the entry just planned; `undo` takes it back with its group. */
    wrote: (key: string, live: boolean, undo: Array<() => void> | undefined) => {
      if (refs === undefined) return
      if (undo !== undefined) {
        const had = liveHere.has(key)
        const before = liveHere.get(key)
        undo.push(() => (had ? liveHere.set(key, before!) : liveHere.delete(key)))
      }
      liveHere.set(key, live)
    },
    keepGroup: () => {
      for (const [k, t] of groupTargets) if (!targets.has(k)) targets.set(k, t)
      for (const d of groupDeletes) deletes.push(d)
      groupTargets = []
      groupDeletes = []
    },
    dropGroup: () => {
      groupTargets = []
      groupDeletes = []
    },
    /**
     * The function's reference arguments: since when to look for new referencing rows, then every target and every
     * delete of the batch, each flagged whether the plan needs it checked (its entry is written and nothing earlier
     * in the batch settles it). The function checks the flagged ones, and answers on all of them: a plan made again
     * on its answer knows about the entries it left out this time too.
     */
    args: (decidedAt: number) => {
      const allTargets = new Map<string, { type: string; id: string }>()
      const allDeletes = new Map<string, { type: string; id: string; byType: string; byField: string }>()
      if (refs !== undefined) {
        for (const list of refs.targets.values()) for (const t of list) allTargets.set(streamKey(t.type, t.id), t)
        for (const [i, incoming] of refs.incoming) {
          const { type, id } = batch.entries[i].event
          for (const by of incoming) allDeletes.set(deleteKey(type, id, by.type, by.field), { type, id, byType: by.type, byField: by.field })
        }
      }
      const checkedDeletes = new Set(deletes.map((d) => deleteKey(d.type, d.id, d.byType, d.byField)))
      const t = [...allTargets]
      const d = [...allDeletes]
      return [
        decidedAt,
        t.map(([, x]) => x.type),
        t.map(([, x]) => x.id),
        t.map(([k]) => targets.has(k)),
        d.map(([, x]) => x.type),
        d.map(([, x]) => x.id),
        d.map(([, x]) => x.byType),
        d.map(([, x]) => x.byField),
        d.map(([k]) => checkedDeletes.has(k))
      ]
    }
  }
}
