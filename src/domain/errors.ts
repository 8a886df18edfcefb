/**
 * The errors a command or a read can end with. Each carries the message that REST and MCP both show,
 * so the two surfaces never word a failure differently.
 */
import { Data } from "effect"

export interface FieldIssue {
  readonly path: ReadonlyArray<string | number>
  readonly message: string
}

/** The input did not match the type's schema, or a method refused it. REST 400; MCP isError result. */
export class ValidationFailed extends Data.TaggedError("ValidationFailed")<{
  readonly type: string
  readonly issues: ReadonlyArray<FieldIssue>
}> {
  override get message() {
    return `invalid ${this.type}: ` +
      this.issues.map((i) => (i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message)).join("; ")
  }
}

/** No row with that id (or it was deleted). REST 404. */
export class NotFound extends Data.TaggedError("NotFound")<{ readonly type: string; readonly id: string }> {
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

/** The log could not make the write durable; nothing of the batch was acknowledged. REST 503. */
export class StoreUnavailable extends Data.TaggedError("StoreUnavailable")<{ readonly reason: string }> {
  override get message() {
    return `the store is unavailable: ${this.reason}`
  }
}

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

export type CommandError = ValidationFailed | NotFound | VersionConflict | MethodFailed | StoreUnavailable

/** The app definition is invalid; the message names the type and the field. */
export class CatalogError extends Data.TaggedError("CatalogError")<{ readonly problems: ReadonlyArray<string> }> {
  override get message() {
    return `invalid app definition:\n  - ${this.problems.join("\n  - ")}`
  }
}
