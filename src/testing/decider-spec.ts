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
import { Either } from "effect"
import { toIntent } from "../domain/decide/intent.ts"
import type { AppDef, EntityDef, Row } from "../domain/catalog.ts"
import type { CompiledType } from "../domain/compile.ts"
import { decide, decideIsolated, type EventDraft } from "../domain/decide/decider.ts"
import type { CommandError } from "../domain/errors.ts"
import { forCommand } from "./command-spec.ts"
import type { OlderEvent, SpecCommandOf, SpecEventOf } from "./spec-types.ts"
import { assertFails, assertRejects, assertSameEvents, comparesParams, compile, pretty, shape, SpecFailed, stateOf, type Fields, type SpecEvent } from "./spec-support.ts"

export { SpecFailed, type SpecEvent } from "./spec-support.ts"
export type { CommandOf, EventOf, OlderEvent, SpecCommandOf, SpecEventOf } from "./spec-types.ts"

/** A command as REST and MCP send it, for the row under test; `input` is what a client would send. */
export type SpecCommand =
  | { readonly _tag: "Create"; readonly input: unknown }
  | { readonly _tag: "Update"; readonly input: unknown; readonly expectedVersion?: number }
  | { readonly _tag: "Delete"; readonly expectedVersion?: number }
  | { readonly _tag: "Invoke"; readonly method: string; readonly input: unknown; readonly expectedVersion?: number }

// The builders below are typed by where they are used: inside `given([...])`, `.when(...)` and `.then([...])`
// (or a variable typed `EventOf<...>`), TypeScript infers `E` (or `C`) from the expected type, so an unknown
// method, an unknown field or a wrong value is a compile error at the spot. With no expected type they give the
// erased forms, which a typed spec does not accept.
// (Each picks in one `Extract`, on the kind and the absence of `schema`, which leaves `OlderEvent` out.)
type EventData<E, K extends string> = Extract<E, { readonly kind: K; readonly schema?: undefined }> extends { readonly data?: infer D } ? D : never
type InvokedMethod<E> = Extract<E, { readonly kind: "invoked"; readonly schema?: undefined }> extends { readonly method: infer M } ? M : never
type Invoked<E, M> = Extract<E, { readonly kind: "invoked"; readonly method: M; readonly schema?: undefined }>
type CommandInput<C, T extends string> = Extract<C, { readonly _tag: T }> extends { readonly input: infer I } ? I : never
/** A method's params, then the version: the params may be left out only when the method requires none. */
type InvokeArguments<I> = {} extends I ? [params?: I, expectedVersion?: number] : [params: I, expectedVersion?: number]
type InvokeMethod<C> = Extract<C, { readonly _tag: "Invoke" }> extends { readonly method: infer M } ? M : never

/** Where a given event was written: `{ schema: 1 }` for an event of schema version 1 (see `SpecEvent`). */
export interface Written {
  readonly schema: number
}

const written = (options: Written | undefined) => (options === undefined ? {} : { schema: options.schema })

/** The row was created with these fields (with `{ schema: n }`: as written at schema version n, untyped). */
export function created<E = SpecEvent>(data: EventData<E, "created">): E
export function created<E = SpecEvent>(data: Fields, options: Written): E
export function created(data: unknown, options?: Written): never {
  return { kind: "created", data, ...written(options) } as never
}
/** These fields were updated (with `{ schema: n }`: as written at schema version n, untyped). */
export function updated<E = SpecEvent>(data: EventData<E, "updated">): E
export function updated<E = SpecEvent>(data: Fields, options: Written): E
export function updated(data: unknown, options?: Written): never {
  return { kind: "updated", data, ...written(options) } as never
}
/** The row was deleted. */
export const deleted = <E = SpecEvent>(): E => ({ kind: "deleted", data: {} }) as never
/** A method changed these fields (its params are compared only when given). */
export const invoked = <E = SpecEvent, const M extends InvokedMethod<E> = InvokedMethod<E>>(
  method: M,
  data: EventData<Invoked<E, M>, "invoked">,
  params?: Invoked<E, M> extends { readonly params?: infer P } ? P : never
): E => (params === undefined ? { kind: "invoked", method, data } : { kind: "invoked", method, data, params }) as never

const withVersion = (expectedVersion: number | undefined) => (expectedVersion === undefined ? {} : { expectedVersion })

/** Create a row from these fields. */
export const create = <C = SpecCommand>(input: CommandInput<C, "Create">): C =>
  ({ _tag: "Create", input }) as never
/** Update these fields; with `expectedVersion`, refuse if the row is at another version. */
export const update = <C = SpecCommand>(input: CommandInput<C, "Update">, expectedVersion?: number): C =>
  ({ _tag: "Update", input, ...withVersion(expectedVersion) }) as never
/** Delete the row. */
export const remove = <C = SpecCommand>(expectedVersion?: number): C =>
  ({ _tag: "Delete", ...withVersion(expectedVersion) }) as never
/** Call a method with these params. */
export const invoke = <C = SpecCommand, const M extends InvokeMethod<C> = InvokeMethod<C>>(
  method: M,
  ...[params, expectedVersion]: InvokeArguments<CommandInput<Extract<C, { readonly method: M }>, "Invoke">>
): C => ({ _tag: "Invoke", method, input: params ?? {}, ...withVersion(expectedVersion) }) as never

export interface WhenResult<E extends EntityDef = EntityDef> {
  /** Asserts the command decided exactly these events. */
  readonly then: (expected: SpecEventOf<E> | ReadonlyArray<SpecEventOf<E>>) => void
  /**
   * Asserts the command was refused: with this error tag (`ValidationFailed`, `NotFound`, `VersionConflict`,
   * `MethodFailed`) when given, and a message containing `message` (or matching it) when given.
   */
  readonly thenFails: (tag?: CommandError["_tag"], message?: string | RegExp) => void
  /**
   * Asserts the domain refused the command (a method's `reject(code, message)`): `Rejected` with this code, and a
   * message containing `message` (or matching it) when given.
   */
  readonly thenRejects: (code: string, message?: string | RegExp) => void
}

export interface Given<E extends EntityDef = EntityDef> {
  readonly when: (command: SpecCommandOf<E>) => WhenResult<E>
}

/** The specs of one entity type: `given(events)`, then `.when(command)`. */
export type GivenEvents<E extends EntityDef = EntityDef> = (
  events?: SpecEventOf<E> | OlderEvent | ReadonlyArray<SpecEventOf<E> | OlderEvent>
) => Given<E>

/** The id of the row under test. */
const ID = "1"

/**
 * Decides as the writer does (the same `decideIsolated`): a method that throws, or returns a value the log
 * cannot store, fails its own command with MethodFailed.
 */
const decideCommand = (type: CompiledType, state: Row | undefined, command: SpecCommand): Either.Either<EventDraft, CommandError> => {
  const intent = toIntent(type, { ...command, type: type.name, id: ID } as Parameters<typeof toIntent>[1])
  if (Either.isLeft(intent)) return Either.left(intent.left)
  const operation = command._tag === "Invoke" ? command.method : command._tag.toLowerCase()
  const expectedVersion = command._tag === "Create" ? undefined : command.expectedVersion
  return decideIsolated({ type: type.name, id: ID, operation }, () => decide(type, ID, state, intent.right, expectedVersion))
}

export const DeciderSpecification = {
  /**
   * Specs for one entity type of `app`: `given(events).when(command).then(events)` or `.thenFails(tag, message)`.
   * Throws the app's CatalogError if the app is invalid, and SpecFailed if it has no such type.
   */
  for: <const A extends AppDef, const T extends Extract<keyof A["entities"], string>>(
    app: A,
    typeName: T
  ): GivenEvents<A["entities"][T]> => {
    const catalog = compile(app)
    const type = catalog.types.get(typeName)
    if (type === undefined) {
      throw new SpecFailed({ message: `app "${catalog.name}" has no type "${typeName}" (it has: ${[...catalog.types.keys()].join(", ")})` })
    }
    const given = (events: SpecEvent | ReadonlyArray<SpecEvent> = []): Given => ({
      when: (typed) => {
        const command = typed as SpecCommand
        const history: ReadonlyArray<SpecEvent> = Array.isArray(events) ? events : [events as SpecEvent]
        const decided = () => decideCommand(type, stateOf(type, ID, history), command)
        const render = (draft: unknown) => pretty([shape(draft as EventDraft, true)])
        return {
          then: (expected) => {
            const want: ReadonlyArray<SpecEvent> = Array.isArray(expected) ? expected : [expected as SpecEvent]
            const result = decided()
            if (Either.isLeft(result)) {
              throw new SpecFailed({
                message: `expected ${want.length} event(s), but the command failed: ${result.left._tag}: ${result.left.message}`
              })
            }
            assertSameEvents(want.map((e) => shape(e, true)), [result.right].map((e, k) => shape(e, comparesParams(want[k]))))
          },
          thenFails: (tag, message) => assertFails(decided(), render, tag, message),
          thenRejects: (code, message) => assertRejects(decided(), render, code, message)
        }
      }
    })
    // The types come from the declaration; the runtime checks the same things again (for untyped callers).
    return given as GivenEvents<any> as GivenEvents<A["entities"][T]>
  },
  forCommand
}
