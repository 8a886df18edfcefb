/**
 * Exactly-once writes: idempotency keys.
 *
 * A write may carry a key (REST `Idempotency-Key`, MCP `_meta["writeonce/idempotencyKey"]`). The writer stores
 * the key, with the request's fingerprint and the entries it wrote, in the same atomic write as its events
 * (EventLog `AppendBatch.keys`). A retry with the key is answered from that record, byte for byte, and flagged as
 * a replay; the same key with another request is refused (IdempotencyKeyReused).
 *
 * On one node a key is decided once: the first request with it owns it until answered, and any other with the
 * same key waits for that answer (`flights`). The writer reads the keys of each batch from the store (one read per
 * batch: before deciding it on the embedded store, in the append call on a shared log), so retries after a restart,
 * a kill -9 or on another node are answered from it. Across nodes of a shared log, the log itself checks
 * the batch's keys under its head lock (log/postgres/append.ts): a key another node stored meanwhile makes the entries
 * `Duplicate`, answered with the stored record.
 *
 * Keys belong to their principal: the key stored is the principal's scope, a space, then the key the client sent
 * (`scopedKey`; a client's key never holds a space), so the same key from another principal is another key. A
 * write without a principal (no credential required), or from `WO_AUTH_TOKEN`'s, stores the key as sent, as every
 * key was stored before principals existed: those keys still answer their retries.
 *
 * Only committed writes are recorded: a refusal (422, 404, 409, ...) or a failure writes nothing, so a retry of
 * a refused request is decided again.
 */
import { Cause, Duration, Effect, Either, Exit, Option, Schedule } from "effect"
import { hash } from "node:crypto"
import type { Row } from "../domain/catalog.ts"
import { IdempotencyKeyReused, isStoreError, type CommandError } from "../domain/errors.ts"
import type { EventLogShape, StoredKey } from "../log/event-log.ts"
import type { CommandCommitted, Committed, Keyed } from "./submission.ts"

export type { Keyed } from "./submission.ts"

/** The REST request header carrying a key (as Node lowercases it). */
export const IDEMPOTENCY_KEY_HEADER = "idempotency-key"
/** The REST response header on an answer given again. */
export const REPLAYED_HEADER = "idempotent-replayed"
/** The MCP `tools/call` `params._meta` key carrying a key. */
export const IDEMPOTENCY_KEY_META = "writeonce/idempotencyKey"
/** The MCP result `_meta` key on an answer given again. */
export const IDEMPOTENT_REPLAY_META = "writeonce/idempotentReplay"
export const MAX_KEY_LENGTH = 255


/** Why a key is not acceptable (1 to 255 visible ASCII characters, no spaces), or undefined when it is. */
export const keyProblem = (key: unknown): string | undefined => {
  if (typeof key !== "string") return "an idempotency key must be a string"
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) return `an idempotency key has 1 to ${MAX_KEY_LENGTH} characters, got ${key.length}`
  if (!/^[\x21-\x7e]+$/.test(key)) return "an idempotency key is visible ASCII (letters, digits, punctuation; no spaces)"
  return undefined
}

/** The key stored for `key` sent by a principal with `scope` (Principal.keyScope). */
export const scopedKey = (scope: string | undefined, key: string) => (scope === undefined ? key : `${scope} ${key}`)

/** The key as its client sent it, from the key stored: what a refusal names. */
export const clientKey = (stored: string) => stored.slice(stored.lastIndexOf(" ") + 1)

/** JSON with object keys sorted at every level: one text per value, whatever the order a client sent. */
const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : canonicalJson(v))).join(",")}]`
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>
    // Written out, never rebuilt as an object: an own `__proto__` key stays a key.
    const fields = Object.keys(record).sort().filter((k) => record[k] !== undefined).map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`)
    return `{${fields.join(",")}}`
  }
  return JSON.stringify(value) ?? "null"
}

/**
 * The fingerprint of a request: sha256 of its operation, target and body, canonical. One-shot `hash`: it runs on
 * every keyed write, and a `createHash` object costs several times as much for a text this small.
 */
export const fingerprintOf = (request: ReadonlyArray<unknown>): string => hash("sha256", canonicalJson(request), "hex")

/** The stored answer as committed changes, flagged as replayed; refused when the key was used for another request. */
export const storedChanges = (stored: StoredKey, fingerprint: string): Either.Either<ReadonlyArray<Committed>, IdempotencyKeyReused> =>
  stored.fingerprint !== fingerprint
    ? Either.left(new IdempotencyKeyReused({ key: clientKey(stored.key) }))
    : Either.right(stored.entries.map(({ event, rowJson }) => ({
      event,
      row: rowJson === null ? null : (JSON.parse(rowJson) as Row),
      rowJson,
      replayed: true as const
    })))

/** An app command's answer from its stored changes (its name and correlation are on each of its events). */
export const commandFromChanges = (changes: ReadonlyArray<Committed>, replayed: boolean): CommandCommitted => ({
  command: changes[0]?.event.command ?? "",
  correlation: changes[0]?.event.correlation ?? "",
  changes,
  ...(replayed ? { replayed: true as const } : {})
})

/** A write's answer, handed to whoever waits for it (a caller's callback: no fiber or Deferred per key). */
type Answer<A> = (exit: Exit.Exit<A, CommandError>) => void

export interface IdempotencyShape {
  /**
   * Runs `attempt` once per key (the writer answers it from the store when the key is stored) and calls `onExit`
   * once with its answer; a request with the same key meanwhile is answered with that answer too (flagged replayed
   * by `asReplay`), one with another request is refused. `attempt` queues the write and calls back with its exit.
   * The write is never cancelled once begun: a caller that goes away leaves it to finish and the waiters an answer.
   */
  readonly runNow: <A>(
    keyed: Keyed,
    attempt: (onExit: Answer<A>) => void,
    fromStored: (stored: StoredKey) => Either.Either<A, IdempotencyKeyReused>,
    asReplay: (a: A) => A,
    onExit: Answer<A>
  ) => void
}

/** A key being decided on this node: the fingerprint of the request that owns it, and who else waits for it. */
interface Flight {
  readonly fingerprint: string
  waiters: Array<Answer<unknown>> | undefined
}

/**
 * The keys in flight, as plain callbacks: the REST and MCP routes without a fiber (http/rest.ts `direct`) and the
 * fiber routes share one table, so a key is decided once whichever way its requests came. Hand-tuned: a fiber and
 * a Deferred per keyed write were most of what a key cost over an unkeyed write (bench/idempotency.ts).
 * `runLookup` runs the store read made after a refusal (rare) and calls back with its result.
 */
export const makeIdempotency = (
  log: EventLogShape,
  runLookup: (lookup: Effect.Effect<StoredKey | undefined, CommandError>, onExit: (exit: Exit.Exit<StoredKey | undefined, CommandError>) => void) => void
): IdempotencyShape => {
  const flights = new Map<string, Flight>()
  return {
    runNow: <A>(
      keyed: Keyed,
      attempt: (onExit: Answer<A>) => void,
      fromStored: (stored: StoredKey) => Either.Either<A, IdempotencyKeyReused>,
      asReplay: (a: A) => A,
      onExit: Answer<A>
    ) => {
      const key = keyed.key
      const flight = flights.get(key)
      if (flight !== undefined) {
        if (flight.fingerprint !== keyed.fingerprint) return onExit(Exit.fail(new IdempotencyKeyReused({ key: clientKey(key) })))
        const wait: Answer<unknown> = (exit) => onExit(Exit.map(exit as Exit.Exit<A, CommandError>, asReplay))
        if (flight.waiters === undefined) flight.waiters = [wait]
        else flight.waiters.push(wait)
        return
      }
      const owned: Flight = { fingerprint: keyed.fingerprint, waiters: undefined }
      flights.set(key, owned)
      const finish = (exit: Exit.Exit<A, CommandError>) => {
        flights.delete(key)
        onExit(exit)
        if (owned.waiters !== undefined) for (const wait of owned.waiters) wait(exit)
      }
      // The writer reads the batch's keys from the store before deciding (one read per batch, group-commit.ts).
      attempt((first) => {
        if (Exit.isSuccess(first)) return finish(first)
        const error = Cause.failureOption(first.cause)
        // A store error is answered as it is (503: a retry with the key settles it): a read of the store it could
        // not reach would hold the answer past the request's deadline (WO_STORE_TIMEOUT, group-commit.ts).
        if (Option.isNone(error) || error.value._tag === "IdempotencyKeyReused" || isStoreError(error.value) || log.storedKey === undefined) return finish(first)
        // Refused: on a shared log another node may have committed this key meanwhile (and moved the row this
        // attempt was decided against). The stored answer wins.
        runLookup(log.storedKey(key), (after) => {
          if (Exit.isFailure(after) || after.value === undefined) return finish(first)
          const stored = fromStored(after.value)
          finish(Either.isRight(stored) ? Exit.succeed(stored.right) : Exit.fail(stored.left))
        })
      })
    }
  }
}

/** How many expired keys one prune step deletes: small, so that it never holds the store long. */
const PRUNE_BATCH = 500

/**
 * Deletes the keys older than `ttlMs`, in small steps, every `ttlMs / 4` (at most a minute, at least a second),
 * forever; a failed round is logged and tried again at the next one. Off the writer's path.
 */
export const pruneExpiredKeys = (log: EventLogShape, ttlMs: number) => {
  const prune = log.pruneKeys
  if (prune === undefined) return Effect.void
  const round = Effect.gen(function* () {
    const before = Date.now() - ttlMs
    for (;;) {
      const n = yield* prune(before, PRUNE_BATCH)
      if (n < PRUNE_BATCH) return
      yield* Effect.yieldNow()
    }
  }).pipe(Effect.catchAll((e) => Effect.logWarning(`cannot prune expired idempotency keys (trying again later): ${e.reason}`)))
  const every = Duration.millis(Math.min(60_000, Math.max(1_000, Math.floor(ttlMs / 4))))
  return Effect.repeat(round, Schedule.spaced(every)).pipe(Effect.asVoid)
}
