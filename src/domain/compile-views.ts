/**
 * Views (declared projections) compiled from the app definition: checked once at load time, every problem
 * named, with the codecs and JSON Schema every surface shares. See `view` in catalog.ts.
 */
import { Either, Schema } from "effect"
import { CRUD_OPS, MAX_VIEW_KEY_LENGTH, type AppDef, type ViewChange, type ViewDef } from "./catalog.ts"
import { copyData, issuesOf } from "./codecs.ts"
import { fastDecoder } from "./fast-decode.ts"
import type { EventKind, StoredEvent } from "./events.ts"
import { filterableFields, type FilterableField } from "./filterable.ts"
import { toJsonSchema, type JsonSchema } from "./json-schema.ts"
import { describeThrown, issuesText, plainJson } from "./decide/user-code.ts"

const NO_FIELDS: ReadonlyMap<string, FilterableField> = new Map()
const VIEW_NAME = /^[a-z][a-z0-9_]*$/
const KINDS: ReadonlyArray<EventKind> = ["created", "updated", "deleted", "invoked"]

export interface CompiledView {
  readonly name: string
  readonly description?: string
  /** The value's JSON Schema (the encoded form, as served). */
  readonly jsonSchema: JsonSchema
  /** The value before any event (typed). */
  readonly initial: unknown
  /** The types whose events it folds. */
  readonly types: ReadonlySet<string>
  /** What it folds, as declared: per type, event kinds and method names. */
  readonly on: Readonly<Record<string, ReadonlyArray<string>>>
  /** Whether it folds this event (its type, and its kind or method). */
  readonly folds: (event: StoredEvent) => boolean
  /**
   * User code: callers run it isolated (domain/decide/user-code.ts). It gets a copy of the change (`viewChangeCopy`): its
   * state is its own, but the event is the log's and the rows are the served ones.
   * A keyed view's evolve copies nothing: its caller (keyed-fold.ts) hands it an entry of its own (decoded from the
   * stored text, or a copy of `initial`) and the copy of the change it gave `key` (`viewChangeCopy`), one per change.
   */
  readonly evolve: (state: unknown, change: ViewChange) => unknown
  /**
   * A keyed view (one entry per key, `key` present): its value is one entry, `initial` the entry before its first
   * change, and `evolve` answers undefined to remove the entry.
   */
  readonly keyed: boolean
  /**
   * User code, run isolated like evolve: the key of the entry a change touches (undefined: none). Its caller hands it
   * a copy of the change (`viewChangeCopy`), then the same copy to evolve: key and evolve of one view may see what
   * the other changed in it, nothing else does. It throws a key that is not one (`viewKeyProblem`), which fails the
   * view like a throwing evolve.
   */
  readonly key?: (change: ViewChange) => string | undefined
  /**
   * A keyed view's entry fields a list can be filtered and ordered by (the scalar and literal fields of a Struct
   * schema, as a type's rows have them: filterable.ts); empty for a whole view.
   */
  readonly filterable: ReadonlyMap<string, FilterableField>
  /** The typed value to its JSON text; Left: why it does not fit the schema or is not plain JSON data. Never throws. */
  readonly encode: (state: unknown) => Either.Either<string, string>
  /** Stored JSON back to the typed value; Left: why it does not fit. Never throws. */
  readonly decode: (json: unknown) => Either.Either<unknown, string>
  /**
   * The declaration as text, for the definition digest (view-record.ts): what it folds, its initial value, its
   * schema and its version. Not evolve's source: transpilers (tsx, vitest, a build) print it differently.
   */
  readonly declaration: string
}

/** The schema's issues as one capped line (a value from user code may be huge). */
const describeIssues = (e: Parameters<typeof issuesOf>[0]) => issuesText(issuesOf(e))

/** Validates and compiles `app.views`, pushing one problem per mistake, each naming the view. */
export const compileViews = (
  app: AppDef,
  typeMethods: ReadonlyMap<string, ReadonlySet<string>>,
  toolNames: ReadonlySet<string>,
  problems: Array<string>
): ReadonlyMap<string, CompiledView> => {
  const views = new Map<string, CompiledView>()
  const declared: unknown = app.views ?? {}
  if (typeof declared !== "object" || declared === null || Array.isArray(declared)) {
    problems.push("views must be an object of view declarations: views: { <name>: view({ ... }) }")
    return views
  }
  const retired = new Set(app.retired ?? [])
  for (const [name, def] of Object.entries(declared as Record<string, ViewDef>)) {
    const where = `view "${name}"`
    const before = problems.length
    if (!VIEW_NAME.test(name)) problems.push(`${where}: names must match ${VIEW_NAME} (used in URLs, URIs and tool names)`)
    if (toolNames.has(`view_${name}`)) problems.push(`${where}: its tool view_${name} clashes with a tool of the same name`)
    if (typeof def !== "object" || def === null) {
      problems.push(`${where}: not a view declaration; use view({ schema, initial, on, evolve })`)
      continue
    }
    if (!Schema.isSchema(def.schema)) problems.push(`${where}: schema is not an Effect Schema`)
    if (typeof def.evolve !== "function") problems.push(`${where}: needs an evolve function (state, change) => state`)
    const keyOf: unknown = def.key
    if (keyOf !== undefined && typeof keyOf !== "function") problems.push(`${where}: key must be a function (change) => string | undefined`)
    const version: unknown = def.version ?? 1
    if (typeof version !== "number" || !Number.isSafeInteger(version) || version < 1) problems.push(`${where}: version must be a positive integer`)
    const on: unknown = def.on
    const folded = new Map<string, ReadonlySet<string>>()
    if (typeof on !== "object" || on === null || Array.isArray(on) || Object.keys(on).length === 0) {
      problems.push(`${where}: on must name the events it folds, e.g. on: { articles: ["created", "updated", "deleted"] }`)
    } else {
      for (const [type, names] of Object.entries(on as Record<string, unknown>)) {
        const methods = typeMethods.get(type)
        if (methods === undefined && !retired.has(type)) {
          problems.push(`${where}: on.${type}: the app declares no type "${type}"`)
          continue
        }
        if (!Array.isArray(names) || names.length === 0) {
          problems.push(`${where}: on.${type}: a list of event kinds (${KINDS.join(", ")}) or method names`)
          continue
        }
        for (const n of names) {
          const known = (KINDS as ReadonlyArray<unknown>).includes(n) || (typeof n === "string" && (methods?.has(n) ?? retired.has(type)))
          if (!known) {
            problems.push(`${where}: on.${type}: ${JSON.stringify(n)} is neither an event kind (${KINDS.join(", ")}) nor a method of ${type}`)
          }
        }
        folded.set(type, new Set(names as ReadonlyArray<string>))
      }
    }
    if (problems.length > before) continue
    let jsonSchema: JsonSchema = {}
    try {
      jsonSchema = toJsonSchema(def.schema)
    } catch (e) {
      problems.push(`${where}: its schema cannot be mapped to JSON Schema: ${describeThrown(e).split("\n")[0]}`)
      continue
    }
    const encodeEither = Schema.encodeUnknownEither(def.schema)
    const decodeEither = Schema.decodeUnknownEither(def.schema)
    // A struct of plain fields (or arrays of them) encodes to itself: checked without Effect's parser when the value
    // passes (a view or keyed entry is encoded in every batch that changes it; the parser cost ~80 µs a batch for a
    // two-field count), by Schema otherwise, which then words the issue.
    const fast = fastDecoder(def.schema.ast, {}, { arraysAsIs: true })
    // A value the plain check cannot read (a proxy that throws) goes to Schema too, which reads only what it needs.
    const fastPlain = (state: unknown) => {
      try {
        return fast?.(state)
      } catch {
        return undefined
      }
    }
    // The value comes from user code (evolve): the schema checks it, then it must be plain JSON data (no NaN,
    // BigInt, cycle, ...), and a value whose very reading throws is refused, not thrown on.
    const encode = (state: unknown): Either.Either<string, string> => {
      try {
        const plain = fastPlain(state)
        if (plain !== undefined) return Either.mapLeft(plainJson(plain), issuesText)
        return Either.flatMap(Either.mapLeft(encodeEither(state), describeIssues), (encoded) => Either.mapLeft(plainJson(encoded), issuesText))
      } catch (e) {
        return Either.left(`cannot be read: ${describeThrown(e)}`)
      }
    }
    const decode = (json: unknown): Either.Either<unknown, string> => {
      try {
        return Either.mapLeft(decodeEither(json), describeIssues)
      } catch (e) {
        return Either.left(`cannot be decoded: ${describeThrown(e)}`)
      }
    }
    const initialJson = encode(def.initial)
    if (Either.isLeft(initialJson)) {
      problems.push(`${where}: initial does not fit its schema: ${initialJson.left}`)
      continue
    }
    const folds = (event: StoredEvent) => {
      const names = folded.get(event.type)
      return names !== undefined && (names.has(event.kind) || (event.method !== undefined && names.has(event.method)))
    }
    const evolve = def.evolve
    const keyed = typeof keyOf === "function"
    const key = keyed ? keyOfChange(name, keyOf as (change: ViewChange) => unknown) : undefined
    views.set(name, {
      name,
      ...(def.description === undefined ? {} : { description: def.description }),
      jsonSchema,
      initial: def.initial,
      types: new Set(folded.keys()),
      on: Object.fromEntries([...folded].map(([type, names]) => [type, [...names]])),
      folds,
      // Hand-tuned for keyed views (a write's hot path): their caller copies the change once for key and evolve.
      evolve: keyed ? evolve : (state, change) => evolve(state, viewChangeCopy(change)),
      keyed,
      ...(key === undefined ? {} : { key }),
      filterable: keyed && Schema.isSchema(def.schema) && "fields" in def.schema ? filterableFields((def.schema as unknown as Schema.Struct<Schema.Struct.Fields>).fields) : NO_FIELDS,
      encode,
      decode,
      declaration: JSON.stringify({
        on: [...folded].map(([type, names]) => [type, [...names].sort()]).sort(),
        initial: initialJson.right,
        schema: jsonSchema,
        version,
        ...(keyed ? { keyed } : {})
      })
    })
  }
  // A keyed view has a second tool, view_<name>_list: it may meet another view's tool, or a type's.
  const owners = new Map<string, Array<string>>()
  for (const v of views.values()) {
    for (const tool of v.keyed ? [`view_${v.name}`, `view_${v.name}_list`] : [`view_${v.name}`]) owners.set(tool, [...(owners.get(tool) ?? []), v.name])
  }
  for (const [tool, names] of owners) {
    if (names.length > 1) problems.push(`views ${names.map((n) => `"${n}"`).join(" and ")}: both make the tool ${tool}; rename one`)
    else if (tool !== `view_${names[0]}` && toolNames.has(tool)) problems.push(`view "${names[0]}": its tool ${tool} clashes with a tool of the same name`)
  }
  return views
}

/**
 * A copy of a change for one evolve: evolve changing its event or rows in place must change neither what the log
 * stores (views are folded before their batch is written) nor the rows served, nor what the next view sees.
 */
export const viewChangeCopy = (change: ViewChange): ViewChange => ({
  event: copyData(change.event) as StoredEvent,
  before: copyData(change.before) as ViewChange["before"],
  after: copyData(change.after) as ViewChange["after"]
})

/** Characters a view key may not hold: C0 and C1 controls (a key is shown in logs, URIs and reports). */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/** Why `key` is not a view key, or undefined when it is one: a non-empty string, capped, without control characters. */
export const viewKeyProblem = (key: unknown): string | undefined => {
  if (typeof key !== "string") return `a key must be a string or undefined, got ${key === null ? "null" : typeof key}`
  if (key.length === 0) return "a key must not be empty"
  if (key.length > MAX_VIEW_KEY_LENGTH) return `a key must be at most ${MAX_VIEW_KEY_LENGTH} characters, got ${key.length}`
  if (CONTROL.test(key)) return `the key ${JSON.stringify(key.slice(0, 40))} holds a control character`
  return undefined
}

/** A keyed view's `key`, its answer checked (a bad key throws: user code failed). */
const keyOfChange = (name: string, key: (change: ViewChange) => unknown) => (change: ViewChange): string | undefined => {
  const k = key(change)
  if (k === undefined) return undefined
  const problem = viewKeyProblem(k)
  if (problem !== undefined) throw new Error(`view ${name}: key: ${problem}`)
  return k as string
}

/** The tool names the types generate (CRUD and methods), so a view's tool cannot shadow one. */
export const typeToolNames = (typeMethods: ReadonlyMap<string, ReadonlySet<string>>): ReadonlySet<string> =>
  new Set([...typeMethods].flatMap(([type, methods]) => [...CRUD_OPS, ...methods].map((op) => `${type}_${op}`)))
