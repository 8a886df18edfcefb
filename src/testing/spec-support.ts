/**
 * What the decider specs of one entity type (decider-spec.ts) and of an app command (command-spec.ts) share:
 * given events folded into rows as the store would, events put in the form they are compared in, and the
 * failure messages of `then`, `thenFails` and `thenRejects`.
 */
import { Data, Either } from "effect"
import type { AppDef, Row } from "../domain/catalog.ts"
import { compileApp, type CompiledApp, type CompiledType } from "../domain/compile.ts"
import { evolve, type EventDraft } from "../domain/decide/decider.ts"
import type { CommandError, FieldIssue } from "../domain/errors.ts"
import type { StoredEvent } from "../domain/events.ts"
import { lineDiff } from "./line-diff.ts"

/** A decider spec did not hold; the message says how, with a diff where there is one. */
export class SpecFailed extends Data.TaggedError("SpecFailed")<{ readonly message: string }> {}

export type Fields = Readonly<Record<string, unknown>>

/**
 * An event as a spec writes it: fields in their JSON (encoded) form, as the log stores them. `schema` is the
 * schema version it was written with (absent: the type's current version); a given event written at an older
 * version goes through the type's migrations first, as every read of the log does.
 */
export type SpecEvent =
  | { readonly kind: "created"; readonly data: Fields; readonly schema?: number }
  | { readonly kind: "updated"; readonly data: Fields; readonly schema?: number }
  | { readonly kind: "deleted"; readonly data?: Fields; readonly schema?: number }
  | {
    readonly kind: "invoked"
    readonly method: string
    readonly data: Fields
    /** Compared only when given. */
    readonly params?: Fields
    readonly schema?: number
  }

export const canonical = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(canonical)
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]))
  }
  return value
}

export const pretty = (value: unknown) => JSON.stringify(value, null, 2).split("\n")

const issuesText = (issues: ReadonlyArray<FieldIssue>) =>
  issues.map((i) => (i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message)).join("; ")

/** The events in the form they are compared: kind, method, params (only where expected), data. */
export const shape = (e: SpecEvent | EventDraft, withParams: boolean) => {
  const { kind, method, params, data } = e as EventDraft
  // Field order inside data and params does not matter: sorted, so that the diff shows only real differences.
  return {
    kind,
    ...(kind === "invoked" ? { method } : {}),
    ...(withParams && params !== undefined ? { params: canonical(params) } : {}),
    data: canonical(data ?? {})
  }
}

/** Whether the expected event compares params: an invoked event that gives them. */
export const comparesParams = (expected: SpecEvent | undefined) => expected?.kind === "invoked" && expected.params !== undefined

/**
 * A given event's fields in the type's current schema version: one written at an older version (`schema: n`)
 * goes through the type's migrations, as every read of the log does (src/log/upcasting-log.ts).
 */
const upcastGiven = (type: CompiledType, event: SpecEvent, where: string): Fields => {
  const from = event.schema ?? type.version
  if (!Number.isSafeInteger(from) || from < 1 || from > type.version) {
    throw new SpecFailed({ message: `${where}: schema ${String(from)} is not a version of ${type.name} (1 to ${type.version})` })
  }
  if (event.kind === "deleted" || from === type.version) return event.data ?? {}
  try {
    return type.upcast({ ...event.data }, from)
  } catch (e) {
    throw new SpecFailed({ message: `${where}: the migration from schema ${from} failed: ${e instanceof Error ? e.message : String(e)}` })
  }
}

/**
 * Folds the given events of row `id` into the row, checking each against the type's schema as the store would.
 * `label` names the row in messages ("" for the single row of an entity spec).
 */
export const stateOf = (type: CompiledType, id: string, events: ReadonlyArray<SpecEvent>, label = ""): Row | undefined => {
  let state: Row | undefined
  events.forEach((event, k) => {
    const where = `given event ${k + 1}${label} (${event.kind})`
    const data = upcastGiven(type, event, where)
    const decoded = event.kind === "created"
      ? type.decodeCreate(data)
      : event.kind === "deleted"
      ? Either.right({})
      : type.decodePatch(data)
    if (Either.isLeft(decoded)) {
      throw new SpecFailed({ message: `${where} does not fit ${type.name}: ${issuesText(decoded.left)}` })
    }
    const stored: StoredEvent = {
      seq: k + 1,
      at: 0,
      type: type.name,
      id,
      version: k + 1,
      kind: event.kind,
      ...(event.kind === "invoked" ? { method: event.method, params: { ...event.params } } : {}),
      data: decoded.right
    }
    state = evolve(state, stored)
  })
  return state
}

const compiled = new WeakMap<AppDef, CompiledApp>()

/** The app compiled once per definition; throws its CatalogError when it is invalid. */
export const compile = (app: AppDef): CompiledApp => {
  const known = compiled.get(app)
  if (known !== undefined) return known
  const result = compileApp(app)
  if (Either.isLeft(result)) throw result.left
  compiled.set(app, result.right)
  return result.right
}

/** Throws SpecFailed with a line diff when the expected and the actual events, compared as JSON, differ. */
export const assertSameEvents = (expected: unknown, actual: unknown) => {
  const expectedLines = pretty(expected)
  const actualLines = pretty(actual)
  if (expectedLines.join("\n") !== actualLines.join("\n")) {
    throw new SpecFailed({
      message: ["the decided events differ (- expected, + actual):", ...lineDiff(expectedLines, actualLines).map((l) => `  ${l}`)].join("\n")
    })
  }
}

const messageWanted = (message: string | RegExp | undefined) =>
  message === undefined ? "" : ` with a message ${typeof message === "string" ? `containing ${JSON.stringify(message)}` : `matching ${message}`}`

const messageMatches = (error: CommandError, message: string | RegExp | undefined) =>
  message === undefined || (typeof message === "string" ? error.message.includes(message) : message.test(error.message))

/**
 * `thenFails`: the command must have failed, with this tag and message when given. `decided` renders what it
 * decided instead (JSON lines) for the message.
 */
export const assertFails = (
  result: Either.Either<unknown, CommandError>,
  decided: (events: unknown) => ReadonlyArray<string>,
  tag: CommandError["_tag"] | undefined,
  message: string | RegExp | undefined
) => {
  const wanted = `${tag ?? "an error"}${messageWanted(message)}`
  if (Either.isRight(result)) {
    throw new SpecFailed({ message: [`expected ${wanted}, but the command decided:`, ...decided(result.right).map((l) => `  ${l}`)].join("\n") })
  }
  const error = result.left
  if ((tag !== undefined && error._tag !== tag) || !messageMatches(error, message)) {
    throw new SpecFailed({ message: `expected ${wanted}, got ${error._tag}: ${error.message}` })
  }
}

/** `thenRejects`: the domain must have refused the command with this code (and message, when given). */
export const assertRejects = (
  result: Either.Either<unknown, CommandError>,
  decided: (events: unknown) => ReadonlyArray<string>,
  code: string,
  message: string | RegExp | undefined
) => {
  const wanted = `Rejected with code ${JSON.stringify(code)}${message === undefined ? "" : ` and a message ${typeof message === "string" ? `containing ${JSON.stringify(message)}` : `matching ${message}`}`}`
  if (Either.isRight(result)) {
    throw new SpecFailed({ message: [`expected ${wanted}, but the command decided:`, ...decided(result.right).map((l) => `  ${l}`)].join("\n") })
  }
  const error = result.left
  if (error._tag !== "Rejected" || error.code !== code || !messageMatches(error, message)) {
    const got = error._tag === "Rejected" ? `Rejected with code ${JSON.stringify(error.code)}` : error._tag
    throw new SpecFailed({ message: `expected ${wanted}, got ${got}: ${error.message}` })
  }
}
