/**
 * The rules `wo verify` checks on either store, in the words it names each problem with: the classic-level and the
 * PostgreSQL checks read their own records (in seq, then key order) and hand each one here, so that one store's
 * report reads as the other's.
 */
import type { StoredEvent } from "../domain/events.ts"
import { streamKey } from "../domain/events.ts"
import { isCanonicalId } from "../domain/ids.ts"

export interface VerifyReport {
  readonly events: number
  readonly rows: number
  /** Every problem found, most specific first; empty when the store is whole. */
  readonly problems: ReadonlyArray<string>
  /** Problems beyond the ones listed. */
  readonly unlisted: number
  /** Losses the operator accepted earlier (`--accept-data-loss`), one line each: reported, not problems. */
  readonly accepted: ReadonlyArray<string>
  readonly millis: number
}

const MAX_LISTED = 50

/** The problem of a record that does not decode, or of anything thrown while checking it. */
export const describeProblem = (e: unknown) => (e instanceof Error ? e.message : String(e))

/**
 * The problem of an event naming a row by another spelling than its id's ("01" for 1): the row store and the log
 * then disagree on which entity it changed. Earlier versions accepted such ids; docs/durability.md says how to repair.
 */
export const nonCanonicalEvent = (seq: number, type: string, id: string) =>
  `event ${seq}: ${type} ${JSON.stringify(id.length > 40 ? `${id.slice(0, 40)}…` : id)} is not a canonical id ` +
  `(written by a writeonce that accepted other spellings of ids); see "Non-canonical ids in a log" in docs/durability.md to repair`

/** The problems a check finds, in the order found: the first MAX_LISTED listed, the rest only counted. */
export const makeProblems = () => {
  const listed: Array<string> = []
  let unlisted = 0
  return {
    add: (text: string) => {
      if (listed.length < MAX_LISTED) listed.push(text)
      else unlisted++
    },
    report: (events: number, rows: number, started: number, accepted: ReadonlyArray<string> = []): VerifyReport =>
      ({ events, rows, problems: listed, unlisted, accepted, millis: Date.now() - started })
  }
}

/** Losses the operator accepted (accepted-loss.ts): the seq gaps they cover, and the version jumps across them. */
export interface AcceptedGaps {
  readonly gapAccepted: (from: number, to: number) => boolean
  readonly lostBetween: (afterSeq: number, beforeSeq: number) => boolean
}

/**
 * The log's rules, fed every event in seq order: seq continuity from 1, version continuity per entity (1 for the
 * create, then +1; nothing after a delete), and the highest id per type; then each row, counter and idempotency key
 * against what the log holds.
 */
export const makeStoreRules = (problem: (text: string) => void, accepted?: AcceptedGaps) => {
  let expectedSeq = 1
  let lastSeq = 0
  const versions = new Map<string, number>() // entity -> last version; -1 after a delete
  const seqOf = new Map<string, number>() // entity -> seq of its last event (only to place a version jump in a loss)
  const maxId = new Map<string, number>()
  return {
    /** The seq of the last event fed. */
    get lastSeq() {
      return lastSeq
    },
    /** An entity's last version in the log: -1 after its delete, undefined with no event. */
    versionOf: (entity: string) => versions.get(entity),
    /** The highest id used per type. */
    maxId: maxId as ReadonlyMap<string, number>,

    /** The next event's seq (`key`: where it is stored): it follows the last one, or an accepted gap lies between. */
    seq: (seq: number, key: string) => {
      if (seq !== expectedSeq && !(seq > expectedSeq && accepted !== undefined && accepted.gapAccepted(expectedSeq, seq - 1))) {
        problem(seq > expectedSeq ? `events ${expectedSeq}..${seq - 1} are missing` : `event key ${key} is out of order`)
      }
      expectedSeq = seq + 1
      lastSeq = seq
    },

    /** The decoded event at `seq`: its id's spelling, and its version after the entity's last one. */
    event: (seq: number, event: StoredEvent) => {
      if (!isCanonicalId(event.id)) problem(nonCanonicalEvent(seq, event.type, String(event.id)))
      const entity = streamKey(event.type, event.id)
      const before = versions.get(entity)
      // Versions that lie in an accepted loss: the entity's events resume past it.
      let acrossLoss = false
      if (accepted !== undefined) {
        acrossLoss = event.version > (before ?? 0) + 1 && accepted.lostBetween(seqOf.get(entity) ?? 0, seq)
        seqOf.set(entity, seq)
      }
      if (before === -1) problem(`event ${seq}: ${entity} changes after its delete`)
      else if (acrossLoss) {
        if (event.kind === "created") problem(`event ${seq}: ${entity} version ${event.version} is a ${event.kind}`)
      } else if (event.version !== (before ?? 0) + 1) {
        problem(`event ${seq}: ${entity} goes from version ${before ?? 0} to ${event.version}`)
      } else if ((event.kind === "created") !== (event.version === 1)) {
        problem(`event ${seq}: ${entity} version ${event.version} is a ${event.kind}`)
      }
      versions.set(entity, event.kind === "deleted" ? -1 : event.version)
      const id = Number(event.id)
      if (id > (maxId.get(event.type) ?? 0)) maxId.set(event.type, id)
    },

    /** A stored live row: at its entity's last version. */
    row: (entity: string, version: number) => {
      const logged = versions.get(entity)
      if (logged === undefined) problem(`row ${entity} has no events in the log`)
      else if (logged === -1) problem(`row ${entity} is stored although the log deleted it`)
      else if (logged !== version) problem(`row ${entity} is at version ${version}, the log at ${logged}`)
    },

    /** A row for every entity the log has live (`rowed`: the entities with a stored row). */
    missingRows: (rowed: ReadonlySet<string>) => {
      for (const [entity, version] of versions) if (version !== -1 && !rowed.has(entity)) problem(`row ${entity} is missing`)
    },

    /** A type's id counter, at or above the highest id its events use. */
    idCounter: (type: string, counter: number | undefined, highest: number) => {
      if (counter === undefined || !(counter >= highest)) problem(`the id counter of ${type} is ${counter ?? "missing"}, below the highest id ${highest}`)
    },

    /** The row counts the store recorded per type against the rows it holds. */
    rowCounts: (recorded: ReadonlyMap<string, number>, stored: ReadonlyMap<string, number>) => {
      for (const type of new Set([...recorded.keys(), ...stored.keys()])) {
        if ((recorded.get(type) ?? 0) !== (stored.get(type) ?? 0)) {
          problem(`${stored.get(type) ?? 0} rows of ${type} are stored, the store recorded ${recorded.get(type) ?? 0}`)
        }
      }
    },

    /** An idempotency key's answer: none of its events past the log's last. */
    keyAnswer: (key: string, entries: ReadonlyArray<{ readonly event: { readonly seq: number } }>) => {
      const beyond = entries.find((e) => e.event.seq > lastSeq)
      if (beyond !== undefined) problem(`idempotency key ${key} answers with event ${beyond.event.seq}, past the last event ${lastSeq}`)
    }
  }
}
