/**
 * What the writer shows to those who only watch it (readiness, metrics): whether it died, and how many commands
 * wait for it. The group-commit writer provides it (group-commit.ts); its watchers need nothing else of it.
 */
import { Context, type Effect } from "effect"

export interface WriterStatusShape {
  /**
   * Completes if the writer dies from a bug of ours. Every command then fails fast with WriterStopped; the
   * process should exit non-zero so that a supervisor restarts it (`wo run` does).
   */
  readonly died: Effect.Effect<string>
  /** Commands queued, not yet taken into a batch (metrics). */
  readonly queueDepth: () => number
}

export class WriterStatus extends Context.Tag("writeonce/WriterStatus")<WriterStatus, WriterStatusShape>() {}
