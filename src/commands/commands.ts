/**
 * The command handlers: one entry point for every write, whatever surface it came from (REST or MCP).
 * Each decodes its payload through the type's Schema, then hands the intent to the group-commit writer.
 */
import { Context, Effect, Either, Layer } from "effect"
import { randomUUID } from "node:crypto"
import { Catalog } from "../domain/app-catalog.ts"
import type { CompiledType } from "../domain/compile.ts"
import type { Intent } from "../domain/decider.ts"
import { guardedRefusal } from "../domain/guarded.ts"
import { NotFound, ValidationFailed, type CommandError, type FieldIssue } from "../domain/errors.ts"
import { inputIssues } from "../domain/input-rules.ts"
import { GroupCommit, type CommandCommitted, type Committed, type Stage } from "./group-commit.ts"

export type Command =
  | { readonly _tag: "Create"; readonly type: string; readonly input: unknown }
  | { readonly _tag: "Update"; readonly type: string; readonly id: string; readonly expectedVersion?: number; readonly input: unknown }
  | { readonly _tag: "Delete"; readonly type: string; readonly id: string; readonly expectedVersion?: number }
  | {
    readonly _tag: "Invoke"
    readonly type: string
    readonly id: string
    readonly method: string
    readonly expectedVersion?: number
    readonly input: unknown
  }

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

const invalid = (type: CompiledType) => (issues: ReadonlyArray<FieldIssue>) => new ValidationFailed({ type: type.name, issues })

/** A command decoded into the intent the Decider takes (the Schema decode REST, MCP and decider specs share). */
export const toIntent = (type: CompiledType, command: Command): Either.Either<Intent, CommandError> => {
  // Before the Schema decode: it accepts Infinity (the log would store null), and its Record copies drop `__proto__`.
  if (command._tag !== "Delete") {
    const issues = inputIssues(command.input)
    if (issues.length > 0) return Either.left(invalid(type)(issues))
  }
  // Fields only methods change: refused whoever sends the body (REST, MCP, an app command, a spec).
  if (command._tag === "Create" || command._tag === "Update") {
    const guarded = guardedRefusal(type, command._tag === "Create" ? "create" : "update", command._tag === "Update" ? command.id : "", command.input)
    if (guarded !== undefined) return Either.left(guarded)
  }
  switch (command._tag) {
    case "Create":
      return Either.mapBoth(type.decodeCreate(command.input ?? {}), {
        onLeft: invalid(type),
        onRight: (fields) => ({ _tag: "Create" as const, fields })
      })
    case "Update":
      return Either.mapBoth(type.decodePatch(command.input ?? {}), {
        onLeft: invalid(type),
        onRight: (patch) => ({ _tag: "Update" as const, patch })
      })
    case "Delete":
      return Either.right({ _tag: "Delete" })
    case "Invoke": {
      const method = type.methods.get(command.method)
      if (method === undefined) {
        return Either.left(new ValidationFailed({ type: type.name, issues: [{ path: [], message: `no method ${command.method}` }] }))
      }
      return Either.mapBoth(method.decodeParams(command.input ?? {}), {
        onLeft: invalid(type),
        onRight: (params) => ({ _tag: "Invoke" as const, method, params })
      })
    }
  }
}

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
