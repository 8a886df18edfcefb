/**
 * The command handlers: one entry point for every write, whatever surface it came from (REST or MCP).
 * Each decodes its payload through the type's Schema, then hands the intent to the group-commit writer.
 */
import { Context, Effect, Either, Exit, Layer, Option, Runtime } from "effect"
import { WoConfig } from "../support/config.ts"
import { EventLog, type StoredKey } from "../log/event-log.ts"
import { randomUUID } from "node:crypto"
import { Catalog } from "../domain/app-catalog.ts"
import { NotFound, ValidationFailed, type CommandError, type IdempotencyKeyReused } from "../domain/errors.ts"
import { isCanonicalId } from "../domain/ids.ts"
import { inputIssues } from "../domain/rules/input-rules.ts"
import { toIntent, type Command } from "../domain/decide/intent.ts"
import { GroupCommit } from "./group-commit.ts"
import { noCancel } from "../support/no-cancel.ts"
import type { CommandCommitted, CommandSubmission, Committed, Stage, Submission } from "./submission.ts"
import { commandFromChanges, fingerprintOf, clientKey, keyProblem, makeIdempotency, pruneExpiredKeys, storedChanges, type Keyed } from "./idempotency.ts"
import { Metrics, metricsOff } from "../metrics/metrics.ts"
import { paramsReferenceRefusal } from "./reference-check.ts"
import { IN_PROCESS, type Actor } from "../domain/actor.ts"

// Where they were before app commands needed them in the domain.
export { toIntent, type Command }
export type { CommandCommitted, Committed, Stage }

export interface ExecuteOptions {
  readonly onStage?: (stage: Stage) => void
  /**
   * The client's idempotency key (checked by the surface with `keyProblem`): the write is done once per key, and a
   * retry gets the first answer back, flagged `replayed` (idempotency.ts).
   */
  readonly idempotencyKey?: string
  /** Keys of the input the surface counted but did not parse, all unknown to the command (http/edge/excess-keys.ts). */
  readonly keysLeftOut?: number
  /** Who asks for the write, recorded on its events (absent: a write made in process, `IN_PROCESS`). */
  readonly actor?: Actor
}

export interface CommandsShape {
  /** Runs one command; succeeds only once its event is durable and projected. */
  readonly execute: (command: Command, options?: ExecuteOptions) => Effect.Effect<Committed, CommandError>
  /**
   * `execute` without a fiber: `onExit` is called once with its answer, from the writer's batch (or before this
   * returns when it is refused up front or its key's earlier attempt answers it). Returns what cancels the command
   * if the writer has not taken it yet (a keyed write is never cancelled: others may wait for its answer).
   */
  readonly executeNow: (
    command: Command,
    options: ExecuteOptions | undefined,
    onExit: (exit: Exit.Exit<Committed, CommandError>) => void
  ) => () => void
  /**
   * Runs the app command `name` (a command across entity types) with the params a client sent: decoded through
   * its params schema, decided in the writer, and all of its events durable and projected, or none written.
   * NotFound (type "_commands") when the app declares no such command.
   */
  readonly executeAppCommand: (name: string, input: unknown, options?: ExecuteOptions) => Effect.Effect<CommandCommitted, CommandError>
  /** `executeAppCommand` without a fiber (as `executeNow` is `execute`'s). */
  readonly executeAppCommandNow: (
    name: string,
    input: unknown,
    options: ExecuteOptions | undefined,
    onExit: (exit: Exit.Exit<CommandCommitted, CommandError>) => void
  ) => () => void
}

export class Commands extends Context.Tag("writeonce/Commands")<Commands, CommandsShape>() {}

const UNKEYED: Either.Either<undefined> = Either.right(undefined)

/** The key checked again (a surface that forgot to would otherwise store any string). */
const keyedBy = (key: string | undefined, request: ReadonlyArray<unknown>): Either.Either<Keyed | undefined, ValidationFailed> => {
  if (key === undefined) return UNKEYED
  // The key as its client sent it: the principal's scope before it (idempotency.ts `scopedKey`) is no client's.
  const problem = keyProblem(clientKey(key))
  return problem === undefined
    ? Either.right({ key, fingerprint: fingerprintOf(request) })
    : Either.left(new ValidationFailed({ type: "request", issues: [{ path: ["Idempotency-Key"], message: problem }] }))
}

/**
 * The cancel of a keyed write: it does nothing (others with its key may be waiting for its answer), and is a new
 * function each time, since the edge counts the direct requests in flight by their cancels (edge.ts).
 */
const neverCancelled = (): (() => void) => () => {}

/** What identifies a row write for its key: the operation, its target and its body. */
const requestOf = (command: Command): ReadonlyArray<unknown> => [
  command._tag,
  command.type,
  command._tag === "Create" ? null : command.id,
  command._tag === "Invoke" ? command.method : null,
  command._tag === "Create" ? null : command.expectedVersion ?? null,
  command._tag === "Delete" ? null : command.input ?? null
]

/** The command handlers over the writer; scoped: expired idempotency keys are pruned in the background. */
export const makeCommands =
  Effect.gen(function* () {
    const catalog = yield* Catalog
    const writer = yield* GroupCommit
    const log = yield* EventLog
    const settings = yield* WoConfig
    // The store read after a keyed refusal runs on this layer's runtime (rare: only a refused keyed write).
    const runCallback = Runtime.runCallback(yield* Effect.runtime<never>())
    const idempotency = makeIdempotency(log, (lookup, onExit) => void runCallback(lookup, { onExit }))
    const metrics = Option.getOrElse(yield* Effect.serviceOption(Metrics), () => metricsOff)
    // A retried write answered from its key's stored answer (or from the attempt it waited for).
    const countReplay = <A extends { readonly replayed?: true }>(a: A) => {
      if (a.replayed === true) metrics.idempotentReplays.inc()
    }
    // Expired keys are pruned in the background, never by the writer.
    yield* Effect.forkScoped(pruneExpiredKeys(log, settings.idempotencyTtlMs))
    /** The command checked and decoded into what the writer takes (its key, if any, checked and fingerprinted). */
    const submissionOf = (command: Command, options: ExecuteOptions | undefined): Either.Either<Submission, CommandError> => {
      const type = catalog.types.get(command.type)
      if (type === undefined) return Either.left(new NotFound({ type: command.type, id: "id" in command ? command.id : "" }))
      // One row, one name: any other spelling of an id is no row, decided before the writer reads anything.
      if (command._tag !== "Create" && !isCanonicalId(command.id)) return Either.left(new NotFound({ type: command.type, id: String(command.id) }))
      const intent = toIntent(type, command, options?.keysLeftOut)
      if (Either.isLeft(intent)) return Either.left(intent.left)
      // The request's fingerprint only for a keyed write (most are not).
      const keyed = options?.idempotencyKey === undefined ? UNKEYED : keyedBy(options.idempotencyKey, requestOf(command))
      if (Either.isLeft(keyed)) return Either.left(keyed.left)
      return Either.right({
        type,
        id: command._tag === "Create" ? undefined : command.id,
        intent: intent.right,
        expectedVersion: command._tag === "Create" ? undefined : command.expectedVersion,
        onStage: options?.onStage,
        idempotency: keyed.right,
        actor: options?.actor ?? IN_PROCESS
      })
    }
    /** The app command checked and its params decoded into what the writer takes (its key, if any, checked). */
    const commandSubmissionOf = (name: string, input: unknown, options: ExecuteOptions | undefined): Either.Either<CommandSubmission, CommandError> => {
      const command = catalog.commands.get(name)
      if (command === undefined) return Either.left(new NotFound({ type: "_commands", id: name }))
      const issues = inputIssues(input)
      if (issues.length > 0) return Either.left(new ValidationFailed({ type: name, issues }))
      const params = command.decodeParams(input ?? {})
      if (Either.isLeft(params)) return Either.left(new ValidationFailed({ type: name, issues: params.left, omitted: options?.keysLeftOut }))
      const dangling = paramsReferenceRefusal(command, params.right)
      if (dangling !== undefined) return Either.left(dangling)
      const keyed = options?.idempotencyKey === undefined ? UNKEYED : keyedBy(options.idempotencyKey, ["Command", name, input ?? {}])
      if (Either.isLeft(keyed)) return Either.left(keyed.left)
      return Either.right({
        app: catalog,
        command,
        params: params.right,
        correlation: randomUUID(),
        onStage: options?.onStage,
        idempotency: keyed.right,
        actor: options?.actor ?? IN_PROCESS
      })
    }
    /** A keyed write, once per key (idempotency.ts): the caller is answered through `onExit`, counted if a replay. */
    const keyedNow = <A extends { readonly replayed?: true }>(
      keyed: Keyed,
      offer: (onExit: (exit: Exit.Exit<A, CommandError>) => void) => void,
      fromStored: (stored: StoredKey) => Either.Either<A, IdempotencyKeyReused>,
      onExit: (exit: Exit.Exit<A, CommandError>) => void
    ) =>
      idempotency.runNow<A>(keyed, offer, fromStored, (a) => ({ ...a, replayed: true }), (exit) => {
        if (Exit.isSuccess(exit)) countReplay(exit.value)
        onExit(exit)
      })
    const rowNow = (submission: Submission, onExit: (exit: Exit.Exit<Committed, CommandError>) => void): (() => void) => {
      const keyed = submission.idempotency
      if (keyed === undefined) return writer.offer(submission, onExit)
      const fingerprint = keyed.fingerprint
      keyedNow<Committed>(keyed, (answer) => void writer.offer(submission, answer), (stored) =>
        Either.map(storedChanges(stored, fingerprint), (changes) => changes[0]), onExit)
      return neverCancelled()
    }
    const commandNow = (submission: CommandSubmission, onExit: (exit: Exit.Exit<CommandCommitted, CommandError>) => void): (() => void) => {
      const keyed = submission.idempotency
      if (keyed === undefined) return writer.offerCommand(submission, onExit)
      const fingerprint = keyed.fingerprint
      keyedNow<CommandCommitted>(keyed, (answer) => void writer.offerCommand(submission, answer), (stored) =>
        Either.map(storedChanges(stored, fingerprint), (changes) => commandFromChanges(changes, true)), onExit)
      return neverCancelled()
    }
    /**
     * A keyed write on a fiber, as `rowNow` / `commandNow` run it; uninterruptible: a caller that goes away waits
     * for the write it began (it is never cancelled).
     */
    const onFiber = <A>(now: (onExit: (exit: Exit.Exit<A, CommandError>) => void) => () => void): Effect.Effect<A, CommandError> =>
      Effect.uninterruptible(Effect.async<A, CommandError>((resume) => void now(resume)))
    return Commands.of({
      execute: (command, options) =>
        Effect.suspend(() => {
          const submission = submissionOf(command, options)
          if (Either.isLeft(submission)) return Effect.fail(submission.left)
          const s = submission.right
          return s.idempotency === undefined ? writer.submit(s) : onFiber<Committed>((onExit) => rowNow(s, onExit))
        }),
      executeNow: (command, options, onExit) => {
        const submission = submissionOf(command, options)
        if (Either.isRight(submission)) return rowNow(submission.right, onExit)
        onExit(Exit.fail(submission.left))
        return noCancel
      },
      executeAppCommand: (name, input, options) =>
        Effect.suspend(() => {
          const submission = commandSubmissionOf(name, input, options)
          if (Either.isLeft(submission)) return Effect.fail(submission.left)
          const s = submission.right
          return s.idempotency === undefined ? writer.submitCommand(s) : onFiber<CommandCommitted>((onExit) => commandNow(s, onExit))
        }),
      executeAppCommandNow: (name, input, options, onExit) => {
        const submission = commandSubmissionOf(name, input, options)
        if (Either.isRight(submission)) return commandNow(submission.right, onExit)
        onExit(Exit.fail(submission.left))
        return noCancel
      }
    })
  })

export const CommandsLive = Layer.scoped(Commands, makeCommands)
