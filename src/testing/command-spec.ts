/**
 * Decider specs for an app command (a command across entity types): given the events of rows of several types,
 * when the command arrives with its params, then the events it decides on each row, or the refusal or error.
 * The command is decided by the same pure core as the server's writer (src/domain/decide/command-decider.ts): its
 * params go through the same Schema decode, each change through the same decode and entity Decider (invariants
 * and guarded fields included), and references are checked as the writer checks them, against the given rows.
 * Nothing is stored and no server runs.
 *
 *   const lend = DeciderSpecification.forCommand(app, "lend")
 *
 *   spec("lending takes a copy off the shelf and opens a loan", () =>
 *     lend({ books: { "1": [dune, invoked("add_copies", { copies: 1, available: 1 })] }, members: { "1": ann } })
 *       .when({ book: "1", member: "1" })
 *       .then({ books: { "1": invoked("check_out", { available: 0 }) }, loans: { "1": created({ book: "1", member: "1", status: "out" }) } }))
 *
 * Rows are keyed by type, then id; a row created by the command takes the next id of its type after the highest
 * given one. `then` names every row the command changes (a row it does not name must not change).
 */
import { Either } from "effect"
import type { Schema } from "effect"
import { paramsMissingRefusal, paramsReferenceRefusal, referenceRefusal } from "../commands/reference-check.ts"
import type { AppDef, Row } from "../domain/catalog.ts"
import { decideCommand, type CommandEventDraft } from "../domain/decide/command-decider.ts"
import type { CompiledApp } from "../domain/compile.ts"
import { evolve } from "../domain/decide/decider.ts"
import { streamKey, type StoredEvent } from "../domain/events.ts"
import { MethodFailed, ValidationFailed, type CommandError } from "../domain/errors.ts"
import { describeThrown } from "../domain/decide/user-code.ts"
import { RowTable } from "../projections/rows/row-table.ts"
import { makeRows, type RowsShape } from "../projections/rows/rows.ts"
import type { OlderEvent, SpecEventOf } from "./spec-types.ts"
import { assertFails, assertRejects, assertSameEvents, comparesParams, compile, pretty, shape, SpecFailed, stateOf, type Fields, type SpecEvent } from "./spec-support.ts"

// --- Types from the declaration ----------------------------------------------------------------------------------
// `defineApp` keeps its commands' names and params in its type: an unknown command, type or field, or a param of
// the wrong type, is a compile error at the spot. An app typed as `AppDef` (erased) takes any name.

type TypeName<A extends AppDef> = Extract<keyof A["entities"], string>
type Commands<A extends AppDef> = NonNullable<A["commands"]>
/** The names of the app's commands. */
export type CommandName<A extends AppDef> = Extract<keyof Commands<A>, string>
/** A command's params as a client sends them (encoded). */
export type CommandParams<A extends AppDef, K extends CommandName<A>> = string extends CommandName<A> ? Fields
  : Schema.Struct.Encoded<Commands<A>[K]["params"]>

/** The given rows: by type, then by id, the events each row already has. */
export type GivenRows<A extends AppDef> = {
  readonly [T in TypeName<A>]?: {
    readonly [id: string]: SpecEventOf<A["entities"][T]> | OlderEvent | ReadonlyArray<SpecEventOf<A["entities"][T]> | OlderEvent>
  }
}

/** The events a command decides: by type, then by id, the events of each row it changes. */
export type DecidedRows<A extends AppDef> = {
  readonly [T in TypeName<A>]?: {
    readonly [id: string]: SpecEventOf<A["entities"][T]> | ReadonlyArray<SpecEventOf<A["entities"][T]>>
  }
}

export interface CommandWhenResult<A extends AppDef> {
  /** Asserts the command decided exactly these events, on exactly these rows. */
  readonly then: (expected: DecidedRows<A>) => void
  /**
   * Asserts the command failed: with this error tag (`ValidationFailed`, `NotFound`, `VersionConflict`,
   * `MethodFailed`, `Rejected`) when given, and a message containing `message` (or matching it) when given.
   */
  readonly thenFails: (tag?: CommandError["_tag"], message?: string | RegExp) => void
  /** Asserts the domain refused the command (a `reject(code, ...)` of the command, a method or an invariant). */
  readonly thenRejects: (code: string, message?: string | RegExp) => void
}

export interface GivenCommand<A extends AppDef, K extends CommandName<A>> {
  readonly when: (...params: {} extends CommandParams<A, K> ? [params?: CommandParams<A, K>] : [params: CommandParams<A, K>]) => CommandWhenResult<A>
}

/** The specs of one app command: `given(rows)`, then `.when(params)`. */
export type GivenRowsOf<A extends AppDef, K extends CommandName<A>> = (rows?: GivenRows<A>) => GivenCommand<A, K>

// ---------------------------------------------------------------------------------------------------------------

type Rows = Readonly<Record<string, Readonly<Record<string, SpecEvent | ReadonlyArray<SpecEvent>>>>>

const list = (events: SpecEvent | ReadonlyArray<SpecEvent>): ReadonlyArray<SpecEvent> =>
  Array.isArray(events) ? events : [events as SpecEvent]

/** A row id as the store assigns them: a positive integer, per type. */
const STORE_ID = /^[1-9][0-9]*$/

/**
 * The decided events grouped by type and id, in the form they are compared; `expected`, when given, says where
 * params are compared (only on the invoked events that give them).
 */
const grouped = (drafts: ReadonlyArray<CommandEventDraft>, expected?: Rows) => {
  const byRow: Record<string, Record<string, Array<ReturnType<typeof shape>>>> = {}
  for (const { type, id, draft } of drafts) {
    const events = ((byRow[type] ??= {})[id] ??= [])
    const want = expected?.[type]?.[id]
    events.push(shape(draft, expected === undefined || comparesParams(want === undefined ? undefined : list(want)[events.length])))
  }
  return byRow
}

/** The given rows as the store would hold them: folded from their events, in the store's row tables. */
const givenRows = (catalog: CompiledApp, rows: Rows): RowsShape => {
  const tables = new Map<string, RowTable>()
  for (const [typeName, byId] of Object.entries(rows)) {
    const type = catalog.types.get(typeName)
    if (type === undefined) {
      throw new SpecFailed({ message: `given rows of "${typeName}": app "${catalog.name}" has no such type (it has: ${[...catalog.types.keys()].join(", ")})` })
    }
    const table = new RowTable()
    tables.set(typeName, table)
    for (const [id, events] of Object.entries(byId ?? {})) {
      if (!STORE_ID.test(id)) throw new SpecFailed({ message: `given row ${typeName} ${JSON.stringify(id)}: ids are the store's, positive integers ("1", "2", ...)` })
      const row = stateOf(type, id, list(events), ` of ${typeName} ${id}`)
      if (row !== undefined) table.set(row)
      // A deleted row keeps its id taken: a create takes the next one after it.
      highestGiven.set(table, Math.max(highestGiven.get(table) ?? 0, Number(id)))
    }
  }
  return makeRows(tables, 0, { rows: 0, events: 0, tailEvents: 0, millis: 0 })
}

/** The highest id given per table, deleted rows included (a table does not keep the ids of deleted rows). */
const highestGiven = new WeakMap<object, number>()

/** The highest id handed out for `type`: the command's creates take the next ones. */
const lastId = (rows: RowsShape, type: string) => highestGiven.get(rows.table(type)) ?? 0

/** The operation a refusal names, by event kind (a method's event names the method). */
const OPERATION = { created: "create", updated: "update", deleted: "delete" } as const

/**
 * References, as the writer checks them (src/commands/reference-check.ts), against the given rows and the
 * command's own earlier changes. (The writer checks each change as it decides it; here they are checked once
 * the core has decided them all, so when a change breaks a reference and a later one is refused too, the spec
 * reports the later refusal.)
 */
const checkReferences = (
  catalog: CompiledApp,
  drafts: ReadonlyArray<CommandEventDraft>,
  rows: RowsShape
): Either.Either<ReadonlyArray<CommandEventDraft>, CommandError> => {
  const overlay = new Map<string, Row | null>()
  for (const { type, id, current, draft } of drafts) {
    const compiled = catalog.types.get(type)!
    const operation = draft.kind === "invoked" ? draft.method ?? "invoked" : OPERATION[draft.kind]
    const refused = referenceRefusal(compiled, id, operation, draft, rows, overlay)
    if (refused !== undefined) return Either.left(refused)
    const event: StoredEvent = { seq: 0, at: 0, type, id, version: (current?.version ?? 0) + 1, ...draft }
    overlay.set(streamKey(type, id), evolve(current, event) ?? null)
  }
  return Either.right(drafts)
}

/**
 * Specs for one command of `app`: `given(rows).when(params).then(rows)`, `.thenRejects(code)` or
 * `.thenFails(tag, message)`. Throws the app's CatalogError if the app is invalid, and SpecFailed if it has no
 * such command.
 */
export const forCommand = <const A extends AppDef, const K extends CommandName<A>>(app: A, name: K): GivenRowsOf<A, K> => {
  const catalog = compile(app)
  const command = catalog.commands.get(name)
  if (command === undefined) {
    const names = [...catalog.commands.keys()]
    throw new SpecFailed({ message: `app "${catalog.name}" has no command "${name}" (${names.length === 0 ? "it has none" : `it has: ${names.join(", ")}`})` })
  }
  const given = (rows: Rows = {}) => ({
    when: (params: unknown = {}) => {
      const decided = (): Either.Either<ReadonlyArray<CommandEventDraft>, CommandError> => {
        const live = givenRows(catalog, rows)
        const decoded = command.decodeParams(params)
        if (Either.isLeft(decoded)) return Either.left(new ValidationFailed({ type: name, issues: decoded.left }))
        // Its ref params name live rows, as the server checks them before the command's code runs: first their
        // spelling (when the command is submitted), then whether the rows exist (when the writer decides it).
        const missing = paramsReferenceRefusal(command, decoded.right) ?? paramsMissingRefusal(command, decoded.right, live.get)
        if (missing !== undefined) return Either.left(missing)
        try {
          const drafts = decideCommand(catalog, command, decoded.right, live.get, (type) => lastId(live, type))
          return Either.flatMap(drafts, (ds) => checkReferences(catalog, ds, live))
        } catch (e) {
          // The core isolates the author's code; this is for a bug of the harness's own, told as the writer would.
          return Either.left(new MethodFailed({ type: name, id: "", operation: name, reason: describeThrown(e) }))
        }
      }
      const render = (drafts: unknown) => pretty(grouped(drafts as ReadonlyArray<CommandEventDraft>))
      return {
        then: (expected: Rows) => {
          const result = decided()
          if (Either.isLeft(result)) {
            throw new SpecFailed({ message: `expected events, but the command failed: ${result.left._tag}: ${result.left.message}` })
          }
          const wanted = Object.fromEntries(Object.entries(expected).map(([type, byId]) => [
            type,
            Object.fromEntries(Object.entries(byId ?? {}).map(([id, events]) => [id, list(events).map((e) => shape(e, true))]))
          ]))
          assertSameEvents(canonicalRows(wanted), canonicalRows(grouped(result.right, expected)))
        },
        thenFails: (tag?: CommandError["_tag"], message?: string | RegExp) => assertFails(decided(), render, tag, message),
        thenRejects: (code: string, message?: string | RegExp) => assertRejects(decided(), render, code, message)
      }
    }
  })
  // The types come from the declaration; the runtime checks the same things again (for untyped callers).
  return given as unknown as GivenRowsOf<A, K>
}

/** Types and ids in a stable order (numeric ids by number), so that a diff shows only real differences. */
const canonicalRows = (rows: Record<string, Record<string, unknown>>) =>
  Object.fromEntries(Object.keys(rows).sort().map((type) => [
    type,
    Object.fromEntries(Object.keys(rows[type]).sort((a, b) => Number(a) - Number(b) || a.localeCompare(b)).map((id) => [id, rows[type][id]]))
  ]))
