/**
 * The startup check: the stored data must fit the app as it is declared now. Every row (after migrations) is
 * decoded once through its type's schema and kept in the current form, defaults applied. A row that does not
 * decode, a type that is gone from the app, or data written by a newer schema refuses startup, by name and
 * with the way out; nothing in the data dir is changed.
 */
import { Data, Either } from "effect"
import type { Row } from "../../domain/catalog.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import type { FieldIssue } from "../../domain/errors.ts"
import type { RowTable } from "./row-table.ts"

/** The stored data does not fit the app's schema; the message names each type and field, and the way out. */
export class SchemaMismatch extends Data.TaggedError("SchemaMismatch")<{ readonly problems: ReadonlyArray<string> }> {
  override get message() {
    return `the stored data does not fit the app's schema (nothing in the data dir was changed):\n  - ${this.problems.join("\n  - ")}`
  }
}

const FIRST_IDS = 5

export const goneTypeProblem = (type: string) =>
  `the log holds events of type "${type}", which the app no longer declares. Declare it again, or retire it ` +
  `to keep its history without serving it: defineApp({ ..., retired: ["${type}"] })`

export const newerSchemaProblem = (type: string, written: number, declared: number) =>
  `type "${type}": the log holds data written with schema version ${written}, but the app declares version ` +
  `${declared}. Run the app that wrote it, or declare version ${written} and its migrations`

/** What to do about rows that do not fit: a default for a missing field, else a migration. */
const wayOut = (field: string | undefined, message: string) => {
  const migration = `entity({ ..., version: <n>, migrations: { <n>: (fields) => ... } }) (see "Changing your schema" in docs/app-authors.md)`
  if (field !== undefined && message === "is missing") {
    return `Give the field a default, ${field}: <its schema>.pipe(Schema.optionalWith({ default: () => ... })), or declare a migration that fills it in: ${migration}`
  }
  return `Accept the old values in the schema, or declare a migration that converts them: ${migration}`
}

interface Failure {
  readonly type: string
  readonly field: string | undefined
  readonly message: string
  count: number
  readonly ids: Array<string>
}

/** Rows that do not fit, grouped by type and field: a count, the first few ids and the way out. */
export const makeMisfits = (noun: string) => {
  const failures = new Map<string, Failure>()
  return {
    add: (type: string, id: string, issues: ReadonlyArray<FieldIssue>) => {
      for (const issue of issues) {
        const field = issue.path.length > 0 ? issue.path.map(String).join(".") : undefined
        const key = `${type}\u0000${field ?? ""}`
        const failure = failures.get(key) ?? { type, field, message: issue.message, count: 0, ids: [] }
        failure.count++
        if (failure.ids.length < FIRST_IDS) failure.ids.push(id)
        failures.set(key, failure)
      }
    },
    problems: (): Array<string> =>
      [...failures.values()].map(({ type, field, message, count, ids }) =>
        `type "${type}"${field === undefined ? "" : `, field "${field}"`}: ${count} ${noun}${count === 1 ? " does" : "s do"} ` +
        `not fit the schema (${message}); ${count === 1 ? "id" : "ids"} ${ids.join(", ")}${count > ids.length ? ", ..." : ""}. ` +
        wayOut(field, message))
  }
}

/**
 * Normalises every row of the app's types in place (decode then encode: defaults applied, fields of older
 * schemas dropped), and returns what does not fit, grouped by type and field.
 */
export const normaliseTables = (
  catalog: CompiledApp,
  tables: ReadonlyMap<string, RowTable>,
  noun = "stored row"
): Array<string> => {
  const misfits = makeMisfits(noun)
  for (const [name, table] of tables) {
    const type = catalog.types.get(name)
    if (type === undefined) continue
    for (const row of table.all()) {
      const normalised = normaliseRow(type.normalise, row)
      if (Either.isRight(normalised)) table.set(normalised.right)
      else misfits.add(name, row.id, normalised.left)
    }
  }
  return misfits.problems()
}

/** One row in the current schema's form, `{id, version, ...fields}` as it is served. */
export const normaliseRow = (
  normalise: (fields: Record<string, unknown>) => Either.Either<Record<string, unknown>, ReadonlyArray<FieldIssue>>,
  row: Row
) => {
  const { id, version, ...fields } = row
  return Either.map(normalise(fields), (encoded): Row => ({ id, version, ...encoded }))
}
