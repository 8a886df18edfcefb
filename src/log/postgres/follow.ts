/**
 * Following the shared log: the events after a seq, in order, forever. A connection of its own LISTENs on the
 * head channel (every append notifies `<new head> <tag of the writing node>`, and a small commit its events too):
 * a notification wakes the reader, which takes the events it carried, and fetches `seq > applied` in batches from
 * the table for the rest. Notifications can be lost (the connection drops, the primary changes), so the reader
 * also polls: often while it is not listening, rarely while it is.
 *
 * Events carried by notifications are kept (at most FOLLOW_BATCH of them, in seq order) until the reader passes
 * them, and dropped when the primary changes; they are verified as fetched ones are, and the table is read instead
 * whenever they do not verify or do not start where the reader stands. Only the primary the node reads and writes is
 * trusted with them: a LISTEN connection opened before the primary changed (the former one may live on, and take
 * writes the new one never sees) only wakes the reader, and is closed so that the next one goes to the new primary.
 *
 * This node's own commits are not read back: its appends say what they wrote (`wrote`), and the follower fetches
 * past what the node has applied only when something beyond it may exist (another node's notification, a failed
 * append that may have landed, the poll, a (re)connected LISTEN). While this node's append is under way, the other
 * nodes' newer commits wait for its answer (a few ms under load): a read then could take the node's own batch back.
 *
 * A commit waiting for its standby stays invisible, but one whose wait was cut short (cancelled, or its postmaster
 * killed: scripts/pg-unacked-probe.ts) is visible on the primary alone, and a promoted standby may lack commits
 * (an asynchronous one, or the wrong one picked). A node may then have applied an event the new primary does not
 * have. So after the primary changes, the reader first checks that the last event it delivered (or this node wrote
 * and applied) is still in the log, unchanged; if not it fails with LogDiverged, and the node must start again from
 * the store. What it checks survives a failed read (the tailer follows again), and a read that ran across the change
 * is checked before it counts.
 */
import { Chunk, Duration, Effect, Either, Option, Schedule, Schema, Stream } from "effect"
import type { StoredEvent } from "../../domain/events.ts"
import { RecordCorrupt } from "../record.ts"
import { LogDiverged } from "../event-log.ts"
import type { PgConnectionShape } from "./connection.ts"
import { decodeEvent, decodeOrFail, EVENT_COLUMNS, EVENT_ROW_COLUMNS } from "./records.ts"
import { HEAD_CHANNEL, SCHEMA } from "./schema.ts"
import { type StoreError, DataCorrupt } from "../../domain/errors.ts"

/** Events per fetch. */
const FOLLOW_BATCH = 1000
/** The poll period while the LISTEN connection is up (a safety net) and while it is down (the only wake-up). */
const POLL_LISTENING = Duration.seconds(2)
const POLL_DEAF = Duration.millis(100)
/** How much later this node's own notification counts: its append's answer comes first when there is one. */
const OWN_NOTIFICATION_LATER = 100

type RawEvent = Readonly<Record<string, unknown>>

const PushedRow = Schema.Array(Schema.Unknown).pipe(Schema.filter((row) => row.length === EVENT_ROW_COLUMNS.length))
const decodePushed = Schema.decodeUnknownEither(Schema.parseJson(Schema.Array(PushedRow)))
const isRowList = (v: unknown): v is ReadonlyArray<ReadonlyArray<unknown>> =>
  Array.isArray(v) && v.every((row) => Array.isArray(row) && row.length === EVENT_ROW_COLUMNS.length)
/** A carried event as the table's read gives it: its columns by name. */
const rowOf = (values: ReadonlyArray<unknown>): RawEvent => {
  const row: Record<string, unknown> = {}
  for (let i = 0; i < values.length; i++) row[EVENT_ROW_COLUMNS[i]] = values[i]
  return row
}

/**
 * The events a notification carries, each verified when it is taken (decodeEvent); none when they are not a list of
 * rows of the carried columns. Hand-tuned (bench/scenarios/follower-cost.ts): a follower parses every commit's
 * notification, and the Schema decode of the list cost it more than the events' own checks; it runs only when the
 * plain check refuses the list.
 */
export const carriedEvents = (json: string): ReadonlyArray<RawEvent> => {
  try {
    const parsed: unknown = JSON.parse(json)
    if (isRowList(parsed)) return parsed.map(rowOf)
  } catch {
    // The Schema decode below refuses it too.
  }
  return Either.getOrElse(Either.map(decodePushed(json), (rows) => rows.map(rowOf)), () => [])
}

/**
 * What a notification says: the new head, which node wrote it (absent from an older writeonce), and the commit's
 * events as JSON when they fit in it (absent otherwise, and from an older writeonce), parsed by `carriedEvents` only
 * when they are wanted: a node does not take its own commits from their notifications.
 */
export const parseNotification = (payload: string | undefined) => {
  const text = payload ?? ""
  const afterHead = text.indexOf(" ")
  const afterTag = afterHead < 0 ? -1 : text.indexOf(" ", afterHead + 1)
  const seq = Number(afterHead < 0 ? text : text.slice(0, afterHead))
  const tag = afterHead < 0 ? undefined : text.slice(afterHead + 1, afterTag < 0 ? undefined : afterTag)
  const events = afterTag < 0 ? undefined : text.slice(afterTag + 1)
  return { head: Number.isInteger(seq) ? seq : undefined, tag, events }
}

/** `tag` names this node's commits in the notifications; `seen` is told every batch of events read. */
export const makeFollow = (conn: PgConnectionShape, tag: string, seen: (events: ReadonlyArray<StoredEvent>) => void) =>
  Effect.gen(function* () {
    // A fetch is due whatever the node has applied (a connect, a failed append, the poll).
    let due = true
    // The highest head heard of: a fetch is due while the node has applied less.
    let heard = 0
    // The last event of this node's last append: the divergence check's, when the follower skips over it.
    let ownLast: { readonly seq: number; readonly checksum: string } | undefined
    // The highest head this node's appends answered for: its own notifications up to it are not news.
    let wroteUpTo = 0
    // The last event this node took from the log (read, or its own batch applied), and the primary it came from.
    // Kept here, not per stream: the tailer follows again after a failed read (a dead primary), and the check
    // after the primary changed must still run then.
    let last: { seq: number; checksum: string } | undefined
    let generation = conn.generation()
    // What following costs: logged at Debug (postgres-log.ts), read by bench/profile-pg.ts.
    // `ownRows`: events read that this node wrote (its own batches: read back only when its writer could not apply them).
    // `wakes`: how often the follower woke from a nap (a wake-up per own batch, applied by the writer, is waste).
    // `pushed`: events taken from notifications (not fetched).
    const cost = { notifications: 0, fetches: 0, emptyFetches: 0, rows: 0, ownRows: 0, wakes: 0, pushed: 0 }
    // Events notifications carried, in seq order from `pushedFrom`, not yet passed by the reader.
    let pushed: Array<RawEvent> = []
    let pushedFrom = 0
    const keepPushed = (raws: ReadonlyArray<RawEvent>) => {
      const first = Number(raws[0]?.seq)
      if (raws.length === 0 || !Number.isSafeInteger(first)) return
      // After a gap (a commit whose events did not fit, or a notification lost), the table fills it: start over.
      if (pushed.length === 0 || first !== pushedFrom + pushed.length) {
        pushed = []
        pushedFrom = first
      }
      if (pushed.length + raws.length > FOLLOW_BATCH) pushed = []
      else for (const raw of raws) pushed.push(raw)
    }
    /** The kept events from `from` on, before `stop`; undefined when they do not start at `from`. */
    const takePushed = (from: number, stop: number | undefined): ReadonlyArray<RawEvent> | undefined => {
      const skip = from - pushedFrom
      if (skip < 0 || skip >= pushed.length) {
        if (skip >= pushed.length) pushed = []
        return undefined
      }
      const end = stop === undefined ? pushed.length : Math.min(pushed.length, skip + stop - from)
      if (end <= skip) return undefined
      const raws = pushed.slice(skip, end)
      pushed = pushed.slice(end)
      pushedFrom += end
      return raws
    }
    // This node's appends not yet passed by the follower, in seq order: `until`, when their writer has had its
    // chance to take them (`wrote`); their events read are counted in `ownRows`.
    const own: Array<{ readonly first: number; readonly last: number; readonly until: number }> = []
    // The head below which this node's append under way will land (`sending`).
    let sendingAfter: number | undefined
    // Each returns whether it woke (a nap with nothing new to read sleeps on).
    const sleepers = new Set<() => boolean>()
    const rouse = () => {
      let woke = false
      for (const s of sleepers) if (s()) woke = true
      return woke
    }
    const wake = () => {
      due = true
      rouse()
    }
    /** This node's append failed (or was cut short): it may have landed, and is read like another node's commit. */
    const failed = () => {
      sendingAfter = undefined
      wake()
    }
    const hear = (head: number) => {
      if (head > heard) heard = head
      rouse()
    }
    /** `fromPrimary`: the notification came from the server the node reads and writes (else only the table counts). */
    const onNotification = (n: { readonly payload?: string }, fromPrimary: boolean) => {
      cost.notifications++
      const { head, tag: writer, events } = parseNotification(n.payload)
      if (head === undefined) return wake()
      // This node's own commit: its append says so (`wrote`), unless it failed after the commit landed; then the
      // notification, heard a little later (the node has applied the batch by then if its append answered), does,
      // and the batch is read from the table (rarely: its events are not parsed for it).
      // One the append has already answered for is nothing new (no timer, no wake-up: one per batch otherwise).
      if (writer !== tag) {
        if (events !== undefined && fromPrimary) keepPushed(carriedEvents(events))
        hear(head)
      } else if (head > wroteUpTo) hearOwnLater(head)
    }
    // Own notifications that came before their append's answer (most do, under load): one timer for all of them.
    let ownHeardLater = 0
    let ownTimer: ReturnType<typeof setTimeout> | undefined
    const hearOwnLater = (head: number) => {
      if (head > ownHeardLater) ownHeardLater = head
      if (ownTimer !== undefined) return
      ownTimer = setTimeout(() => {
        ownTimer = undefined
        // The append answered for it meanwhile: nothing new.
        if (ownHeardLater > wroteUpTo) hear(ownHeardLater)
      }, OWN_NOTIFICATION_LATER)
    }
    /**
     * This node appended `first`..`head`. Its writer takes the batch right after this (applies it, or holds it until
     * the other nodes' commits before it are applied: the tailer's `readBefore`): until it had its chance (for
     * OWN_NOTIFICATION_LATER), the follower reads only up to the batch, and reads the batch only if it was not taken.
     */
    const wrote = (head: number, last?: { readonly seq: number; readonly checksum: string }, first?: number) => {
      sendingAfter = undefined
      if (first !== undefined && first <= head) own.push({ first, last: head, until: Date.now() + OWN_NOTIFICATION_LATER })
      if (last !== undefined) ownLast = last
      if (head > wroteUpTo) wroteUpTo = head
      if (head > heard) heard = head
      // Once the writer has taken its batch, a napping follower has nothing new (it sleeps on): the timer only when
      // someone woke (the batch was not taken, or the follower stands before it).
      setImmediate(() => {
        if (rouse()) setTimeout(rouse, OWN_NOTIFICATION_LATER + 1)
      })
    }
    /**
     * This node is appending a batch to a log whose head was at least `head`: until the append answers (`wrote`) or
     * fails (`failed`), the follower reads no further, so that it never reads the batch it is about to be told of.
     * Its commit may be visible before this node has handled the answer, and the other nodes' commits after `head`
     * are read right after it, up to the batch.
     */
    const sending = (head: number) => {
      sendingAfter = head
    }
    /** Where a read after `position` stops: before this node's own batch its writer is (or may still be) taking. */
    const readsStop = (position: number, readBefore: number | undefined) => {
      while (own.length > 0 && own[0].last <= position) own.shift()
      // A held batch is never just after the position (the node applies it then): if it were, it is read.
      let stop = readBefore !== undefined && readBefore > position + 1 ? readBefore : Infinity
      const now = Date.now()
      for (const o of own) {
        if (o.first > position && o.until > now) {
          stop = Math.min(stop, o.first)
          break
        }
      }
      if (sendingAfter !== undefined) stop = Math.min(stop, sendingAfter + 1)
      return stop === Infinity ? undefined : stop
    }
    /** Waits for a wake-up, or `ms`: the follower stands just before an own batch its writer is taking. */
    const rest = (ms: number) =>
      Effect.async<void>((resume) => {
        const done = () => {
          clearTimeout(timer)
          sleepers.delete(done)
          resume(Effect.void)
          return true
        }
        const timer = setTimeout(done, ms)
        sleepers.add(done)
        return Effect.sync(() => {
          clearTimeout(timer)
          sleepers.delete(done)
        })
      })
    let listening = false

    // The LISTEN connection: reopened (to whatever is the primary then) after it drops.
    const listenOnce = Effect.scoped(
      Effect.gen(function* () {
        // The connection goes to the primary of this generation (or a later one's: then nothing it carries is taken).
        const listenedAt = conn.generation()
        const client = yield* conn.dedicated
        client.on("notification", (n) => {
          // The primary changed since (the old one may live on, and take writes the new one never sees): its
          // notifications only wake the reader, and the connection is closed so that the next one goes to the new one.
          const fromPrimary = listenedAt === conn.generation()
          onNotification(n, fromPrimary)
          if (!fromPrimary) client.end().catch(() => undefined)
        })
        yield* Effect.tryPromise({ try: () => client.query(`listen ${HEAD_CHANNEL}`), catch: (e) => conn.failed("cannot listen to the log", e) })
        listening = true
        // Commits made while nobody listened are fetched now (what was kept before may have a gap after it).
        pushed = []
        wake()
        yield* Effect.async<void>((resume) => {
          const done = () => resume(Effect.void)
          client.once("error", done)
          client.once("end", done)
        })
      })
    ).pipe(
      Effect.ensuring(Effect.sync(() => {
        listening = false
      })),
      Effect.ignore
    )
    yield* Effect.forkScoped(Effect.repeat(listenOnce, Schedule.spaced(Duration.millis(250))))

    /**
     * Waits for a wake-up or the poll period, whichever comes first. A wake-up (`rouse`) with nothing `fresh` (no fetch
     * due, nothing heard beyond what the node applied) leaves it asleep: one per own batch otherwise, for nothing.
     */
    const nap = (fresh: () => boolean) => Effect.async<void>((resume) => {
      if (due) return resume(Effect.void)
      const done = () => {
        clearTimeout(timer)
        sleepers.delete(sleeper)
        resume(Effect.void)
      }
      const sleeper = () => {
        if (!due && !fresh()) return false
        done()
        return true
      }
      const timer = setTimeout(() => {
        due = true
        done()
      }, Duration.toMillis(listening ? POLL_LISTENING : POLL_DEAF))
      sleepers.add(sleeper)
      return Effect.sync(() => {
        clearTimeout(timer)
        sleepers.delete(sleeper)
      })
    })

    /**
     * Up to FOLLOW_BATCH events from `from` on, all before `before`, and before `stop()` as it is once they arrive:
     * an append sent while the read waited for a connection may have landed in it.
     */
    const fetch = (from: number, before: number, stop: () => number | undefined) =>
      Effect.flatMap(
        conn.query("cannot read the log", `select ${EVENT_COLUMNS} from ${SCHEMA}.events e where e.seq >= $1 order by e.seq limit $2`, [from, Math.min(FOLLOW_BATCH, before - from)]),
        (r) => {
          const end = stop()
          const raws = end === undefined ? r.rows : r.rows.filter((raw) => Number(raw.seq) < end)
          // What was cut off is read again once the node has taken its batch: no nap before that.
          if (raws.length < r.rows.length) due = true
          return decodeFrom(from, raws)
        }
      )

    /** Rows of the events table from `from` on, verified and decoded: each one's checksum, and no seq missing. */
    const decodeFrom = (from: number, raws: ReadonlyArray<RawEvent>) => {
      const decoded = decodeOrFail(() => raws.map((raw) => ({ event: decodeEvent(raw), seq: Number(raw.seq), checksum: String(raw.checksum) })))
      if (decoded._tag === "Left") return Either.left(decoded.left)
      let expected = from
      for (const { event } of decoded.right) {
        if (event.seq !== expected) {
          return Either.left(new DataCorrupt({ reason: new RecordCorrupt(`corrupt log: event ${expected} is missing (the next is ${event.seq})`).message }))
        }
        expected++
      }
      return Either.right(decoded.right)
    }

    /** The kept events from `from` on (before `stop`), when they are there and verify; the table decides otherwise. */
    const fromNotifications = (from: number, stop: number | undefined) => {
      const raws = takePushed(from, stop)
      if (raws === undefined) return undefined
      const decoded = decodeFrom(from, raws)
      if (Either.isLeft(decoded)) {
        pushed = []
        return undefined
      }
      cost.pushed += raws.length
      return decoded.right
    }

    /** The checksum stored for `seq` now (undefined: no such event). */
    const checksumAt = (seq: number) =>
      Effect.map(
        conn.query<{ checksum: string }>("cannot read the log", `select checksum from ${SCHEMA}.events where seq = $1`, [seq]),
        (r) => r.rows[0]?.checksum
      )

    /**
     * The events after `afterSeq`. `applied` (the follower's position) lets the reader skip what the node applied
     * itself, and fetch only when something beyond it may exist.
     */
    const events = (afterSeq: number, applied?: () => number, readBefore?: () => number | undefined): Stream.Stream<StoredEvent, StoreError | LogDiverged> =>
      Stream.suspend(() => {
        // Each pull waits here until there are events to deliver: a wake-up with nothing new (this node's own batch,
        // applied by its writer; an empty fetch) loops here instead of passing an empty chunk down the stream.
        return Stream.paginateChunkEffect(afterSeq + 1, (start) =>
          Effect.gen(function* () {
            for (let from = start; ;) {
              // What the node applied itself (its own batches) is not read again.
              const position = Math.max(from - 1, applied?.() ?? 0)
              if (position >= from && ownLast !== undefined && ownLast.seq === position) last = ownLast
              if (generation !== conn.generation() && last !== undefined) {
                const now = yield* checksumAt(last.seq)
                if (now !== last.checksum) {
                  return yield* new LogDiverged({
                    reason: `after the primary changed, the log ${now === undefined ? "no longer has" : "holds another"} event ${last.seq}, which this node applied ` +
                      `(a commit the old primary never replicated, never acknowledged)`
                  })
                }
              }
              // Kept events may be the former primary's: the new one's table decides.
              if (generation !== conn.generation()) pushed = []
              generation = conn.generation()
              from = position + 1
              // Worth waking for: a head heard beyond what the node has applied by then (its writer applies its own).
              const fresh = () => heard > Math.max(from - 1, applied?.() ?? 0)
              if (!due && heard <= position) {
                yield* nap(fresh)
                cost.wakes++
                continue
              }
              // An own batch its writer takes is applied by the node once the others' commits before it are: read up
              // to it, and not at all when the node stands just before it.
              const stop = readsStop(position, readBefore?.())
              if (stop !== undefined && stop <= from) {
                // Woken when the append answers (`wrote`, `failed`) or when the writer's chance to take its batch is over.
                yield* rest(sendingAfter !== undefined ? Duration.toMillis(POLL_LISTENING) : OWN_NOTIFICATION_LATER + 1)
                continue
              }
              // What notifications carried needs no read (a fetch that is due stays due).
              const carried = fromNotifications(from, stop)
              // Cleared before the read: a wake-up that arrives during it makes the next nap return at once.
              if (carried === undefined) due = false
              // Kept events further on: only the gap before them is read (a commit that did not fit in its notification).
              const gapEnd = pushed.length > 0 && pushedFrom > from ? pushedFrom : Infinity
              const batch = carried ?? (yield* fetch(from, Math.min(stop ?? Infinity, gapEnd), () => readsStop(position, readBefore?.())))
              if (carried === undefined) {
                cost.fetches++
                cost.rows += batch.length
              }
              if (generation !== conn.generation()) {
                // The primary changed during the read (which may have run on the new one): check, then read again.
                due = true
                continue
              }
              if (batch.length === 0) {
                cost.emptyFetches++
                yield* nap(fresh)
                cost.wakes++
                continue
              }
              const events = batch.map((b) => b.event)
              for (const { seq } of events) if (own.some((o) => o.first <= seq && seq <= o.last)) cost.ownRows++
              seen(events)
              last = batch[batch.length - 1]
              if (last.seq > heard) heard = last.seq
              return [Chunk.unsafeFromArray(events), Option.some(from + batch.length)] as const
            }
          }))
      })

    return { events, wake, failed, sending, wrote, cost }
  })
