/**
 * The process-level answer to a dead writer: if the group-commit fiber dies from a bug of ours, every command
 * already fails fast (group-commit.ts); this exits the process with status 1 so that a supervisor restarts it.
 * `wo run` composes it; an embedding program may prefer its own policy, so it is not part of `writeOnceLayer`.
 */
import { Console, Effect, Layer } from "effect"
import { GroupCommit } from "./group-commit.ts"

export const exitWhenTheWriterDies = Layer.scopedDiscard(
  Effect.gen(function* () {
    const writer = yield* GroupCommit
    yield* Effect.forkScoped(
      Effect.flatMap(writer.died, (reason) =>
        Effect.zipRight(
          Console.error(`wo: the group-commit writer died (${reason}); exiting so that a supervisor restarts the server`),
          Effect.sync(() => process.exit(1))
        ))
    )
  })
)
