/**
 * Schema versions and migrations. An entity type declares `version: n` and `migrations: { 2: ..., n: ... }`;
 * every event and stored row records the version it was written with, and reading it applies the migrations
 * above that version (upcasting), so every reader sees data in the current schema's form. The log itself
 * is never rewritten.
 */
import { Data } from "effect"
import type { EntityDef, Migration } from "./catalog.ts"
import type { FieldIssue } from "./errors.ts"
import { copyData } from "./codecs.ts"
import { issuesText, plainData, runUserCode } from "./decide/user-code.ts"

/** Rename a field, when present: `migrations: { 2: renameField("title", "headline") }`. */
export const renameField =
  (from: string, to: string): Migration =>
  (fields) => {
    if (!(from in fields)) return fields as Record<string, unknown>
    const { [from]: value, ...rest } = fields
    return { ...rest, [to]: value }
  }

/** Change a field's encoded value, when present: `mapField("price", (p) => Math.round((p as number) * 100))`. */
export const mapField =
  (name: string, f: (value: unknown) => unknown): Migration =>
  (fields) => (name in fields ? { ...fields, [name]: f(fields[name]) } : (fields as Record<string, unknown>))

/** A migration threw, returned something other than an object of plain JSON data, or fields its schema refuses. */
export class MigrationFailed extends Data.TaggedError("MigrationFailed")<{
  readonly type: string
  readonly version: number
  readonly reason: string
}> {
  override get message() {
    return `type "${this.type}", migration ${this.version} failed: ${this.reason}`
  }
}

/**
 * Brings fields written at `from` to the type's current version. Throws MigrationFailed. With `fits`, the
 * result must also fit the current schema (its issues, empty when it does).
 */
export type Upcast = (
  fields: Record<string, unknown>,
  from: number,
  fits?: (fields: Record<string, unknown>) => ReadonlyArray<FieldIssue>
) => Record<string, unknown>

export interface CompiledMigrations {
  readonly version: number
  readonly upcast: Upcast
}

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** Checks `version` and `migrations` (contiguous from 2 to `version`, each a function), naming every problem. */
export const compileMigrations = (type: string, def: EntityDef, problems: Array<string>): CompiledMigrations => {
  const where = `type "${type}"`
  const version = def.version ?? 1
  if (!Number.isSafeInteger(version) || version < 1) {
    problems.push(`${where}: version must be a whole number from 1, got ${String(def.version)}`)
    return { version: 1, upcast: (fields) => fields }
  }
  const declared = def.migrations ?? {}
  if (!isPlainObject(declared)) {
    problems.push(`${where}: migrations must be an object of version number to function, e.g. { 2: renameField("a", "b") }`)
    return { version, upcast: (fields) => fields }
  }
  const steps: Array<Migration> = []
  for (let v = 2; v <= version; v++) {
    const m = declared[v]
    if (m === undefined) problems.push(`${where}, migration ${v}: missing; version ${version} needs one migration for each version from 2 to ${version}, turning version ${v - 1} data into version ${v}`)
    else if (typeof m !== "function") problems.push(`${where}, migration ${v}: not a function`)
    else steps[v] = m
  }
  for (const key of Object.keys(declared)) {
    const v = Number(key)
    if (!Number.isSafeInteger(v) || v < 2) problems.push(`${where}, migration "${key}": migrations are keyed by the version they produce, from 2`)
    else if (v > version) problems.push(`${where}, migration ${v}: beyond the declared version ${version}${def.version === undefined ? " (declare version: " + v + ")" : ""}`)
  }
  if (version === 1) return { version, upcast: (fields) => fields }
  return {
    version,
    upcast: (fields, from, fits) => {
      const first = Math.max(from, 1) + 1
      // The first migration gets a copy: the fields are the event or row as read, which other readers share
      // (each later migration gets the copy of the one before).
      let out = first <= version ? (copyData(fields) as Record<string, unknown>) : fields
      for (let v = first; v <= version; v++) {
        // User code: what it throws is described; what it returns is copied as plain JSON data (no NaN,
        // which JSON would store as null, no BigInt, cycle or getter) or refused naming the field.
        const step = steps[v]
        const input = out
        const migrated = runUserCode(() => step(input))
        if (migrated._tag === "Left") throw new MigrationFailed({ type, version: v, reason: migrated.left.reason })
        const result = migrated.right
        const notFields = () => new MigrationFailed({ type, version: v, reason: "it must return an object of fields" })
        if (typeof result !== "object" || result === null) throw notFields()
        const copied = plainData(result)
        if (copied._tag === "Left") throw new MigrationFailed({ type, version: v, reason: `it returned ${issuesText(copied.left)}` })
        if (!isPlainObject(copied.right)) throw notFields()
        out = copied.right
      }
      const issues = fits?.(out) ?? []
      if (issues.length > 0) {
        throw new MigrationFailed({ type, version: version, reason: `its result does not fit the schema: ${issuesText(issues)}` })
      }
      return out
    }
  }
}
