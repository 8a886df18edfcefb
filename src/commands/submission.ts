/**
 * What the writer's queue holds: a submission (a single-row write or an app command) with the callback that answers
 * its caller, and the answers it gets. Shared by the queue (group-commit.ts), the decision (decide-batch.ts) and the
 * commit modes (commit-mode.ts).
 */
import type { Exit } from "effect"
import type { Row } from "../domain/catalog.ts"
import type { CompiledApp, CompiledType } from "../domain/compile.ts"
import type { CompiledCommand } from "../domain/compile-commands.ts"
import type { Intent } from "../domain/decide/decider.ts"
import type { CommandError } from "../domain/errors.ts"
import type { Change, StoredEvent } from "../domain/events.ts"
import type { Actor } from "../domain/actor.ts"

/** A submission's idempotency key and the fingerprint of its request (idempotency.ts). */
export interface Keyed {
  readonly key: string
  readonly fingerprint: string
}

/** Where a command is, reported to callers that stream progress (MCP progressToken). */
export type Stage = "accepted" | "decided" | "durable"

export interface Submission {
  readonly type: CompiledType
  /** Absent for a create: the writer assigns the next id of the type. */
  readonly id?: string
  readonly intent: Intent
  readonly expectedVersion?: number
  readonly onStage?: (stage: Stage) => void
  /** Its idempotency key: stored with its event, in the same atomic write (idempotency.ts). */
  readonly idempotency?: Keyed
  /** Who asks for it: recorded on its event. */
  readonly actor: Actor
}

export interface Committed {
  readonly event: StoredEvent
  /** The row after the command; null after a delete. */
  readonly row: Row | null
  /** The row serialised once, for the store and for the response alike. */
  readonly rowJson: string | null
  /** The answer was given before: this is its retry, answered from the stored idempotency key. */
  readonly replayed?: true
}

/**
 * An app command (a command across entity types): decided whole in the writer, against the batch so far, and
 * appended whole or not at all; each of its events carries its name and correlation.
 */
export interface CommandSubmission {
  readonly app: CompiledApp
  readonly command: CompiledCommand
  /** Decoded already (`command.decodeParams`). */
  readonly params: Record<string, unknown>
  /** One id for this execution, on each of its events (kept when it is decided again). */
  readonly correlation: string
  readonly onStage?: (stage: Stage) => void
  readonly idempotency?: Keyed
  /** Who runs it: recorded on each of its events. */
  readonly actor: Actor
}

/** An app command's events, in the order of its changes, each with its row after it. */
export interface CommandCommitted {
  readonly command: string
  readonly correlation: string
  readonly changes: ReadonlyArray<Committed>
  readonly replayed?: true
}

export interface Pending extends Submission {
  readonly kind?: undefined
  readonly resume: (exit: Exit.Exit<Committed, CommandError>) => void
  /** The caller went away before the writer took the command: skip it. */
  cancelled: boolean
  /** Shared log: how many times the log refused it as stale. */
  attempts: number
  /** Shared log: it was refused here as not found or conflicting, and is being decided again on caught-up rows. */
  recheck: boolean
  /** When it was queued (ms since the epoch; 0 where no deadline watches it): its deadline runs from there. */
  readonly arrivedAt: number
  /** Its caller was answered (by the writer, or by its deadline): a later answer is dropped. */
  answered: boolean
}

export interface PendingCommand extends CommandSubmission {
  readonly kind: "command"
  readonly resume: (exit: Exit.Exit<CommandCommitted, CommandError>) => void
  cancelled: boolean
  attempts: number
  recheck: boolean
  readonly arrivedAt: number
  answered: boolean
}

/** What the writer's queue holds: a single-row write or an app command. */
export type Queued = Pending | PendingCommand

/** A decided change: the event, the row after it (and before it), and the row serialised once. */
export type Decided = Change & { readonly rowJson: string | null }
