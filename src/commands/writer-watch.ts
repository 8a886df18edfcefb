/**
 * The process-level answer to a dead writer: if the group-commit fiber dies from a bug of ours, every command
 * already fails fast (group-commit.ts); this exits the process with status 1 so that a supervisor restarts it.
 * `wo run` composes it; an embedding program may prefer its own policy, so it is not part of `writeOnceLayer`.
 * The same for a node on a shared log whose tailer found that the log lost a commit it had applied (a failover):
 * restarted, it rebuilds its state from the store.
 */
import { Console, Effect, Layer } from "effect"
import { GroupCommit } from "./group-commit.ts"
import { CommitMode } from "./commit-mode.ts"

export const exitWhenTheWriterDies = Layer.scopedDiscard(
  Effect.gen(function* () {
    const writer = yield* GroupCommit
    const mode = yield* CommitMode
    yield* Effect.forkScoped(
      Effect.flatMap(writer.died, (reason) =>
        Effect.zipRight(
          Console.error(`wo: the group-commit writer died (${reason}); exiting so that a supervisor restarts the server`),
          Effect.sync(() => process.exit(1))
        ))
    )
    if (mode._tag === "Local") return
    yield* Effect.forkScoped(
      Effect.flatMap(mode.tailer.diverged, (reason) =>
        Effect.zipRight(
          Console.error(`wo: ${reason}; exiting so that a supervisor restarts the server from the store`),
          Effect.sync(() => process.exit(1))
        ))
    )
  })
)
