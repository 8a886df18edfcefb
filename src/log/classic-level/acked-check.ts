/**
 * The open-time check of the acknowledged-head record (acked-head.ts) against the store's head: every seq the
 * writer acknowledged must still be in the store. LevelDB does not report a write-ahead log that was removed,
 * emptied, truncated or replaced by an older one: this check is what sees it.
 */
import { ACKED_FILE, type ReadRecord } from "./acked-head.ts"
import { countSeqs, type SeqRanges } from "./accepted-loss.ts"

export type AckedVerdict =
  /** The store holds every acknowledged seq (a head past it: a batch that landed but whose record write failed). */
  | { readonly _tag: "Whole"; readonly counters: ReadonlyMap<string, number> }
  /** No record yet: a new store, or one written by a writeonce without the record. It is written now. */
  | { readonly _tag: "NoRecord" }
  /** Acknowledged events are gone from the store. */
  | { readonly _tag: "Lost"; readonly lostSeqs: SeqRanges; readonly counters: ReadonlyMap<string, number>; readonly reason: string }
  /** The record is missing or damaged on a store that had one: a rollback cannot be ruled out. */
  | { readonly _tag: "Unknown"; readonly reason: string }

export interface StoreState {
  readonly lastSeq: number
  /** The store says a record was kept for it (a key written with its first batch that had one). */
  readonly hadRecord: boolean
}

export const checkAckedHead = (store: StoreState, found: ReadRecord): AckedVerdict => {
  if (found._tag === "Found") {
    const { acked, counters } = found.record
    if (store.lastSeq >= acked) return { _tag: "Whole", counters }
    const lostSeqs: SeqRanges = [[store.lastSeq + 1, acked]]
    return {
      _tag: "Lost",
      lostSeqs,
      counters,
      reason: `${countSeqs(lostSeqs)} acknowledged events are missing: the store ends at seq ${store.lastSeq}, but seqs ` +
        `${store.lastSeq + 1}..${acked} were acknowledged (${ACKED_FILE}). LevelDB's write-ahead log lost them ` +
        "(removed, emptied, truncated or replaced by an older copy) without reporting it"
    }
  }
  if (!store.hadRecord) return { _tag: "NoRecord" }
  return {
    _tag: "Unknown",
    reason: found._tag === "Missing"
      ? `the acknowledged-head record ${ACKED_FILE} is missing, though this store kept one: whether acknowledged writes were rolled back cannot be checked`
      : `the acknowledged-head record ${ACKED_FILE} is damaged (${found.reason}): whether acknowledged writes were rolled back cannot be checked`
  }
}
