/**
 * The errors a command or a read can end with. Each carries the message that REST and MCP both show,
 * so the two surfaces never word a failure differently.
 */
import { Data } from "effect"
import type { StoreError } from "./store-errors.ts"

export interface FieldIssue {
  readonly path: ReadonlyArray<string | number>
  readonly message: string
}

/** At most this many issues travel in an error (REST body, MCP text); the rest are only counted. */
export const MAX_ISSUES = 20
/** A message or a path segment longer than this is cut: an issue quotes the input, which can be megabytes. */
export const MAX_ISSUE_TEXT = 300

/**
 * Issues as a producer collected them: at most MAX_ISSUES, and, in `omitted`, how many more it found but did
 * not keep (so a body of 200,000 bad keys costs a count, not 200,000 messages).
 */
export type FieldIssues = ReadonlyArray<FieldIssue> & { readonly omitted?: number }

const clip = (text: string) => (text.length > MAX_ISSUE_TEXT ? `${text.slice(0, MAX_ISSUE_TEXT)}…` : text)

/** Keeps the first MAX_ISSUES issues, each clipped, and counts the rest (with those the producer counted). */
export const boundIssues = (issues: FieldIssues, omitted = 0): FieldIssues => {
  const kept = issues.slice(0, MAX_ISSUES).map((i) => ({
    path: i.path.map((p) => (typeof p === "string" ? clip(p) : p)),
    message: clip(i.message)
  }))
  const more = omitted + (issues.omitted ?? 0) + Math.max(0, issues.length - MAX_ISSUES)
  return more > 0 ? Object.assign(kept, { omitted: more }) : kept
}

/**
 * Collects issues up to MAX_ISSUES and counts the rest: what every producer of many issues uses. Paths are
 * kept as strings, array indexes too, as in the issues of a Schema decode.
 */
export class IssueCollector {
  private readonly kept: Array<FieldIssue> = []
  private more = 0
  add(path: ReadonlyArray<string | number>, message: string): void {
    if (this.kept.length < MAX_ISSUES) this.kept.push({ path: path.map(String), message })
    else this.more++
  }
  addAll(issues: FieldIssues): void {
    for (const i of issues) this.add(i.path, i.message)
    this.more += issues.omitted ?? 0
  }
  get size() {
    return this.kept.length + this.more
  }
  get issues(): FieldIssues {
    return boundIssues(this.kept, this.more)
  }
}

/** `; … and 199,980 more`: how a message ends when issues were left out. */
export const andMore = (omitted: number | undefined) => (omitted ? `; … and ${omitted.toLocaleString("en-US")} more` : "")

/**
 * The input did not match the type's schema, or a method refused it. REST 400; MCP isError result. Bounded
 * whatever it is given: at most MAX_ISSUES issues, each clipped, and `omitted` the count of those left out.
 */
export class ValidationFailed extends Data.TaggedError("ValidationFailed")<{
  readonly type: string
  readonly issues: ReadonlyArray<FieldIssue>
  /** How many issues were found beyond those listed (absent when none were). */
  readonly omitted?: number
}> {
  constructor(args: { readonly type: string; readonly issues: FieldIssues; readonly omitted?: number }) {
    const issues = boundIssues(args.issues, args.omitted)
    super({ type: args.type, issues: [...issues], ...(issues.omitted ? { omitted: issues.omitted } : {}) })
  }

  override get message() {
    const listed = this.issues.map((i) => (i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message)).join("; ")
    return `invalid ${this.type}: ${listed}${andMore(this.omitted)}`
  }
}

/**
 * No row with that id (or it was deleted). REST 404. The id is clipped as an issue's text is: a client may send
 * an id of megabytes, and the answer stays small.
 */
export class NotFound extends Data.TaggedError("NotFound")<{ readonly type: string; readonly id: string }> {
  constructor(args: { readonly type: string; readonly id: string }) {
    super({ type: args.type, id: clip(args.id) })
  }

  override get message() {
    return `${this.type} ${this.id} not found`
  }
}

/** The caller expected another version than the current one. REST 409 (412 for If-Match). */
export class VersionConflict extends Data.TaggedError("VersionConflict")<{
  readonly type: string
  readonly id: string
  readonly expected: number
  readonly actual: number
}> {
  override get message() {
    return `${this.type} ${this.id} is at version ${this.actual}, not the expected ${this.expected}`
  }
}

export * from "./store-errors.ts"
/**
 * The store errors by their old single name, kept for embedders (the package index exports it).
 * @deprecated Use `StoreError`. REST still names every store error `StoreUnavailable` in its body.
 */
export type StoreUnavailable = StoreError

/**
 * A method's `apply` (user code) threw, or a row could not be decoded or encoded inside the writer. Only this
 * command fails: nothing is written for it and the rest of its batch commits. REST 500; MCP isError result.
 */
export class MethodFailed extends Data.TaggedError("MethodFailed")<{
  readonly type: string
  readonly id: string
  /** The method's name, or the CRUD operation ("create", "update", "delete"). */
  readonly operation: string
  readonly reason: string
}> {
  override get message() {
    return `${this.operation} failed: ${this.reason}`
  }
}

/**
 * The domain refused the command: a method's `reject(code, message)`. Not malformed input (that is
 * ValidationFailed) and not the author's bug (MethodFailed). REST 422 with the code; MCP isError with
 * `structuredContent: {error, code, message}`.
 */
export class Rejected extends Data.TaggedError("Rejected")<{
  readonly type: string
  readonly id: string
  /** The method's name. */
  readonly operation: string
  readonly code: string
  readonly reason: string
  /** For a missing reference: the type whose row does not exist (what to look in). */
  readonly target?: string
}> {
  override get message() {
    return this.reason
  }
}

/**
 * An idempotency key came back with another request than the one it was first used for (another operation,
 * target or body). Nothing is done for it. REST 422; MCP isError with `_meta["writeonce/refusal"]`.
 */
export class IdempotencyKeyReused extends Data.TaggedError("IdempotencyKeyReused")<{ readonly key: string }> {
  override get message() {
    return `the idempotency key ${JSON.stringify(this.key)} was already used for another request; send a new key with a new request`
  }
}

export type CommandError = ValidationFailed | NotFound | VersionConflict | Rejected | MethodFailed | StoreError | IdempotencyKeyReused

/** The app definition is invalid; the message names the type and the field. */
export class CatalogError extends Data.TaggedError("CatalogError")<{ readonly problems: ReadonlyArray<string> }> {
  override get message() {
    return `invalid app definition:\n  - ${this.problems.join("\n  - ")}`
  }
}
