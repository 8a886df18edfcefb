/**
 * Decider specifications: an app's business rules tested without I/O, in the spirit of Emmett's
 * `DeciderSpecification`. Given the events a row already has, when a command arrives, then these events, or this
 * error. The command goes through the same Schema decode and the same `decide` as the server's writer; nothing
 * is stored and no server runs.
 *
 *   const given = DeciderSpecification.for(app, "tasks")
 *
 *   spec("an open task can be completed", () =>
 *     given([created({ title: "Write the README", done: false })])
 *       .when(invoke("complete"))
 *       .then([invoked("complete", { done: true })]))
 *
 * `then` and `thenFails` throw a `SpecFailed` with a readable diff, so a spec also runs inside any test framework.
 */
import { Data, Either } from "effect"
import { toIntent } from "../commands/commands.ts"
import type { AppDef, Row } from "../domain/catalog.ts"
import { compileApp, type CompiledApp, type CompiledType } from "../domain/compile.ts"
import { decide, evolve, type EventDraft } from "../domain/decider.ts"
import { MethodFailed, type CommandError, type FieldIssue } from "../domain/errors.ts"
import type { StoredEvent } from "../domain/events.ts"
import { describeThrown } from "../domain/user-code.ts"
import { lineDiff } from "./line-diff.ts"

/** A decider spec did not hold; the message says how, with a diff where there is one. */
export class SpecFailed extends Data.TaggedError("SpecFailed")<{ readonly message: string }> {}

type Fields = Readonly<Record<string, unknown>>

/** An event as a spec writes it: fields in their JSON (encoded) form, as the log stores them. */
export type SpecEvent =
  | { readonly kind: "created"; readonly data: Fields }
  | { readonly kind: "updated"; readonly data: Fields }
  | { readonly kind: "deleted"; readonly data?: Fields }
  | {
    readonly kind: "invoked"
    readonly method: string
    readonly data: Fields
    /** Compared only when given. */
    readonly params?: Fields
  }

/** The row was created with these fields. */
export const created = (data: Fields): SpecEvent => ({ kind: "created", data })
/** These fields were updated. */
export const updated = (data: Fields): SpecEvent => ({ kind: "updated", data })
/** The row was deleted. */
export const deleted = (): SpecEvent => ({ kind: "deleted", data: {} })
/** A method changed these fields (its params are compared only when given). */
export const invoked = (method: string, data: Fields, params?: Fields): SpecEvent =>
  params === undefined ? { kind: "invoked", method, data } : { kind: "invoked", method, data, params }

/** A command as REST and MCP send it, for the row under test; `input` is what a client would send. */
export type SpecCommand =
  | { readonly _tag: "Create"; readonly input: unknown }
  | { readonly _tag: "Update"; readonly input: unknown; readonly expectedVersion?: number }
  | { readonly _tag: "Delete"; readonly expectedVersion?: number }
  | { readonly _tag: "Invoke"; readonly method: string; readonly input: unknown; readonly expectedVersion?: number }

const withVersion = (expectedVersion: number | undefined) => (expectedVersion === undefined ? {} : { expectedVersion })

/** Create a row from these fields. */
export const create = (input: unknown): SpecCommand => ({ _tag: "Create", input })
/** Update these fields; with `expectedVersion`, refuse if the row is at another version. */
export const update = (input: unknown, expectedVersion?: number): SpecCommand => ({ _tag: "Update", input, ...withVersion(expectedVersion) })
/** Delete the row. */
export const remove = (expectedVersion?: number): SpecCommand => ({ _tag: "Delete", ...withVersion(expectedVersion) })
/** Call a method with these params. */
export const invoke = (method: string, params: unknown = {}, expectedVersion?: number): SpecCommand =>
  ({ _tag: "Invoke", method, input: params, ...withVersion(expectedVersion) })

export interface WhenResult {
  /** Asserts the command decided exactly these events. */
  readonly then: (expected: SpecEvent | ReadonlyArray<SpecEvent>) => void
  /**
   * Asserts the command was refused: with this error tag (`ValidationFailed`, `NotFound`, `VersionConflict`,
   * `MethodFailed`) when given, and a message containing `message` (or matching it) when given.
   */
  readonly thenFails: (tag?: CommandError["_tag"], message?: string | RegExp) => void
}

export interface Given {
  readonly when: (command: SpecCommand) => WhenResult
}

/** The id of the row under test. */
const ID = "1"

// ---------------------------------------------------------------------------------------------------------------

const canonical = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(canonical)
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]))
  }
  return value
}
const pretty = (value: unknown) => JSON.stringify(value, null, 2).split("\n")
const issuesText = (issues: ReadonlyArray<FieldIssue>) =>
  issues.map((i) => (i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message)).join("; ")

/** The events in the form they are compared: kind, method, params (only where expected), data. */
const shape = (e: SpecEvent | EventDraft, withParams: boolean) => {
  const { kind, method, params, data } = e as EventDraft
  // Field order inside data and params does not matter: sorted, so that the diff shows only real differences.
  return {
    kind,
    ...(kind === "invoked" ? { method } : {}),
    ...(withParams && params !== undefined ? { params: canonical(params) } : {}),
    data: canonical(data ?? {})
  }
}

/** Folds the given events into the row, checking each against the type's schema as the store would. */
const stateOf = (type: CompiledType, events: ReadonlyArray<SpecEvent>): Row | undefined => {
  let state: Row | undefined
  events.forEach((event, k) => {
    const decoded = event.kind === "created"
      ? type.decodeCreate(event.data)
      : event.kind === "deleted"
      ? Either.right({})
      : type.decodePatch(event.data)
    if (Either.isLeft(decoded)) {
      throw new SpecFailed({ message: `given event ${k + 1} (${event.kind}) does not fit ${type.name}: ${issuesText(decoded.left)}` })
    }
    const stored: StoredEvent = {
      seq: k + 1,
      at: 0,
      type: type.name,
      id: ID,
      version: k + 1,
      kind: event.kind,
      ...(event.kind === "invoked" ? { method: event.method, params: { ...event.params } } : {}),
      data: decoded.right
    }
    state = evolve(state, stored)
  })
  return state
}

/**
 * Decides like the writer does (src/commands/group-commit.ts): a method that throws, or returns a value the log
 * cannot store, fails its own command with MethodFailed.
 */
const decideCommand = (type: CompiledType, state: Row | undefined, command: SpecCommand): Either.Either<EventDraft, CommandError> => {
  const intent = toIntent(type, { ...command, type: type.name, id: ID } as Parameters<typeof toIntent>[1])
  if (Either.isLeft(intent)) return Either.left(intent.left)
  const operation = command._tag === "Invoke" ? command.method : command._tag.toLowerCase()
  const expectedVersion = command._tag === "Create" ? undefined : command.expectedVersion
  const failed = (reason: string) => Either.left(new MethodFailed({ type: type.name, id: ID, operation, reason }))
  try {
    const decision = decide(type, ID, state, intent.right, expectedVersion)
    if (Either.isLeft(decision) && decision.left._tag === "UserCodeFailure") return failed(decision.left.reason)
    return decision as Either.Either<EventDraft, CommandError>
  } catch (e) {
    return failed(describeThrown(e))
  }
}

const compiled = new WeakMap<AppDef, CompiledApp>()

const compile = (app: AppDef): CompiledApp => {
  const known = compiled.get(app)
  if (known !== undefined) return known
  const result = compileApp(app)
  if (Either.isLeft(result)) throw result.left
  compiled.set(app, result.right)
  return result.right
}

export const DeciderSpecification = {
  /**
   * Specs for one entity type of `app`: `given(events).when(command).then(events)` or `.thenFails(tag, message)`.
   * Throws the app's CatalogError if the app is invalid, and SpecFailed if it has no such type.
   */
  for: (app: AppDef, typeName: string) => {
    const catalog = compile(app)
    const type = catalog.types.get(typeName)
    if (type === undefined) {
      throw new SpecFailed({ message: `app "${catalog.name}" has no type "${typeName}" (it has: ${[...catalog.types.keys()].join(", ")})` })
    }
    return (events: SpecEvent | ReadonlyArray<SpecEvent> = []): Given => ({
      when: (command) => {
        const given: ReadonlyArray<SpecEvent> = Array.isArray(events) ? events : [events as SpecEvent]
        const decided = () => decideCommand(type, stateOf(type, given), command)
        return {
          then: (expected) => {
            const want: ReadonlyArray<SpecEvent> = Array.isArray(expected) ? expected : [expected as SpecEvent]
            const result = decided()
            if (Either.isLeft(result)) {
              throw new SpecFailed({
                message: `expected ${want.length} event(s), but the command failed: ${result.left._tag}: ${result.left.message}`
              })
            }
            const actual = [result.right]
            const wanted = want.map((e) => shape(e, true))
            const got = actual.map((e, k) => shape(e, want[k]?.kind === "invoked" && want[k].params !== undefined))
            const expectedLines = pretty(wanted)
            const actualLines = pretty(got)
            if (expectedLines.join("\n") !== actualLines.join("\n")) {
              throw new SpecFailed({
                message: ["the decided events differ (- expected, + actual):", ...lineDiff(expectedLines, actualLines).map((l) => `  ${l}`)].join("\n")
              })
            }
          },
          thenFails: (tag, message) => {
            const result = decided()
            const wanted = `${tag ?? "an error"}${message === undefined ? "" : ` with a message ${typeof message === "string" ? `containing ${JSON.stringify(message)}` : `matching ${message}`}`}`
            if (Either.isRight(result)) {
              throw new SpecFailed({ message: [`expected ${wanted}, but the command decided:`, ...pretty([shape(result.right, true)]).map((l) => `  ${l}`)].join("\n") })
            }
            const error = result.left
            const messageOk = message === undefined || (typeof message === "string" ? error.message.includes(message) : message.test(error.message))
            if ((tag !== undefined && error._tag !== tag) || !messageOk) {
              throw new SpecFailed({ message: `expected ${wanted}, got ${error._tag}: ${error.message}` })
            }
          }
        }
      }
    })
  }
}
