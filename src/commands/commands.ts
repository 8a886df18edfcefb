/**
 * The command handlers: one entry point for every write, whatever surface it came from (REST or MCP).
 * Each decodes its payload through the type's Schema, then hands the intent to the group-commit writer.
 */
import { Context, Effect, Either, Layer } from "effect"
import { randomUUID } from "node:crypto"
import { Catalog } from "../domain/app-catalog.ts"
import { NotFound, ValidationFailed, type CommandError } from "../domain/errors.ts"
import { inputIssues } from "../domain/input-rules.ts"
import { toIntent, type Command } from "../domain/intent.ts"
import { GroupCommit, type CommandCommitted, type Committed, type Stage } from "./group-commit.ts"

// Where they were before app commands needed them in the domain.
export { toIntent, type Command }

export interface ExecuteOptions {
  readonly onStage?: (stage: Stage) => void
}

export interface CommandsShape {
  /** Runs one command; succeeds only once its event is durable and projected. */
  readonly execute: (command: Command, options?: ExecuteOptions) => Effect.Effect<Committed, CommandError>
  /**
   * Runs the app command `name` (a command across entity types) with the params a client sent: decoded through
   * its params schema, decided in the writer, and all of its events durable and projected, or none written.
   * NotFound (type "_commands") when the app declares no such command.
   */
  readonly executeAppCommand: (name: string, input: unknown, options?: ExecuteOptions) => Effect.Effect<CommandCommitted, CommandError>
}

export class Commands extends Context.Tag("writeonce/Commands")<Commands, CommandsShape>() {}

export const CommandsLive = Layer.effect(
  Commands,
  Effect.gen(function* () {
    const catalog = yield* Catalog
    const writer = yield* GroupCommit
    return Commands.of({
      execute: (command, options) =>
        Effect.suspend(() => {
          const type = catalog.types.get(command.type)
          if (type === undefined) return Effect.fail(new NotFound({ type: command.type, id: "id" in command ? command.id : "" }))
          const intent = toIntent(type, command)
          if (Either.isLeft(intent)) return Effect.fail(intent.left)
          return writer.submit({
            type,
            id: command._tag === "Create" ? undefined : command.id,
            intent: intent.right,
            expectedVersion: command._tag === "Create" ? undefined : command.expectedVersion,
            onStage: options?.onStage
          })
        }),
      executeAppCommand: (name, input, options) =>
        Effect.suspend(() => {
          const command = catalog.commands.get(name)
          if (command === undefined) return Effect.fail(new NotFound({ type: "_commands", id: name }))
          const issues = inputIssues(input)
          if (issues.length > 0) return Effect.fail(new ValidationFailed({ type: name, issues }))
          const params = command.decodeParams(input ?? {})
          if (Either.isLeft(params)) return Effect.fail(new ValidationFailed({ type: name, issues: params.left }))
          return writer.submitCommand({ app: catalog, command, params: params.right, correlation: randomUUID(), onStage: options?.onStage })
        })
    })
  })
)
