/**
 * Why the store could not serve a command or a read, one tagged error per cause, and how each cause shows on
 * every surface, in one table (STORE_ERRORS): its REST status and Retry-After, its MCP error, the level it is
 * logged at and its label in `wo_refusals_total`. Every store error says "the store is unavailable: <reason>",
 * and REST names them all `StoreUnavailable` in its body: the wire says only that the store is down, and the
 * cause travels in the type.
 */
import { Data, LogLevel } from "effect"

// Each class is spelled out (not made by a factory): the shipped .d.ts must be able to name its base.
const said = (reason: string) => `the store is unavailable: ${reason}`

/** The writer's queue is full (WO_MAX_PENDING): a retry soon can succeed. */
export class Overloaded extends Data.TaggedError("Overloaded")<{ readonly reason: string }> {
  override get message() {
    return said(this.reason)
  }
}
/** The server is shutting down: it takes no more commands. */
export class ShuttingDown extends Data.TaggedError("ShuttingDown")<{ readonly reason: string }> {
  override get message() {
    return said(this.reason)
  }
}
/** The group-commit writer died from a bug of ours: every command fails until a restart. */
export class WriterStopped extends Data.TaggedError("WriterStopped")<{ readonly reason: string }> {
  override get message() {
    return said(this.reason)
  }
}
/** The store could not be opened, read, written or reached (disk, permissions, PostgreSQL, a bad dir or URL). */
export class StoreFailed extends Data.TaggedError("StoreFailed")<{ readonly reason: string }> {
  override get message() {
    return said(this.reason)
  }
}
/** What the store holds is damaged: a record fails its checksum or decode, an event or a row is missing. */
export class DataCorrupt extends Data.TaggedError("DataCorrupt")<{ readonly reason: string }> {
  override get message() {
    return said(this.reason)
  }
}
/** Shared log: the entity kept changing on other nodes through every attempt; a retry can succeed. */
export class Contended extends Data.TaggedError("Contended")<{ readonly reason: string }> {
  override get message() {
    return said(this.reason)
  }
}
/** Shared log: this node has not read the log up to a write it must answer with, in time. */
export class ReplicaLagging extends Data.TaggedError("ReplicaLagging")<{ readonly reason: string }> {
  override get message() {
    return said(this.reason)
  }
}

/**
 * Shared log: the request was not answered within WO_STORE_TIMEOUT of its arrival (the primary is paused or
 * unreachable, or the batches ahead of it took that long). A write may or may not have landed: its reason says which.
 */
export class TimedOut extends Data.TaggedError("TimedOut")<{ readonly reason: string }> {
  override get message() {
    return said(this.reason)
  }
}

export type StoreError = Overloaded | ShuttingDown | WriterStopped | StoreFailed | DataCorrupt | Contended | ReplicaLagging | TimedOut
export type StoreErrorTag = StoreError["_tag"]

/** The MCP error a store error travels as where MCP answers with a JSON-RPC error (sessions, subscriptions). */
export type McpErrorName = "InternalError"

export interface StoreErrorPolicy {
  readonly make: new (args: { readonly reason: string }) => StoreError
  /** REST: the status, with `{error: "StoreUnavailable", message}`. */
  readonly status: number
  /** REST and MCP: Retry-After in seconds on that status, when a retry can be worth it. */
  readonly retryAfter: number | undefined
  /** MCP: the JSON-RPC error code's name (protocol.ts ErrorCode), sent with `status`. Tool calls answer isError. */
  readonly mcp: McpErrorName
  /** The level a failed durable write is logged at. */
  readonly log: LogLevel.LogLevel
  /** The `code` label of `wo_refusals_total{error="StoreUnavailable"}`. */
  readonly metric: string
}

/** The body's `error` of every store error on REST, and the metric's `error` label. */
export const STORE_UNAVAILABLE = "StoreUnavailable"

/** How each cause shows: the one table. */
export const STORE_ERRORS: { readonly [T in StoreErrorTag]: StoreErrorPolicy } = {
  Overloaded: { make: Overloaded, status: 503, retryAfter: 1, mcp: "InternalError", log: LogLevel.Warning, metric: "Overloaded" },
  ShuttingDown: { make: ShuttingDown, status: 503, retryAfter: 1, mcp: "InternalError", log: LogLevel.Info, metric: "ShuttingDown" },
  WriterStopped: { make: WriterStopped, status: 503, retryAfter: 1, mcp: "InternalError", log: LogLevel.Error, metric: "WriterStopped" },
  StoreFailed: { make: StoreFailed, status: 503, retryAfter: 1, mcp: "InternalError", log: LogLevel.Error, metric: "StoreFailed" },
  DataCorrupt: { make: DataCorrupt, status: 503, retryAfter: 1, mcp: "InternalError", log: LogLevel.Error, metric: "DataCorrupt" },
  Contended: { make: Contended, status: 503, retryAfter: 1, mcp: "InternalError", log: LogLevel.Warning, metric: "Contended" },
  ReplicaLagging: { make: ReplicaLagging, status: 503, retryAfter: 1, mcp: "InternalError", log: LogLevel.Warning, metric: "ReplicaLagging" },
  TimedOut: { make: TimedOut, status: 503, retryAfter: 1, mcp: "InternalError", log: LogLevel.Warning, metric: "TimedOut" }
}

export const storeErrorPolicy = (e: StoreError): StoreErrorPolicy => STORE_ERRORS[e._tag]

export const isStoreError = (u: unknown): u is StoreError =>
  typeof u === "object" && u !== null && "_tag" in u && Object.hasOwn(STORE_ERRORS, u._tag as string) && u instanceof STORE_ERRORS[u._tag as StoreErrorTag].make

/** The same cause with its reason reworded (a private copy's path named as the dir it was made from). */
export const withReason = (e: StoreError, reason: string): StoreError => new STORE_ERRORS[e._tag].make({ reason })
