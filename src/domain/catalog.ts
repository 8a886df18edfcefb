/**
 * The catalog: how an app declares its entity types over Effect Schema.
 *
 * An app is `defineApp({ name, entities: { <type>: entity({ fields, methods, rest, mcp }) } })`.
 * Fields are Effect Schema struct fields; methods are pure commands over the current row.
 */
import type { Schema } from "effect"
import type { Row, StoredEvent } from "./events.ts"

/** The operations every entity type has, before exposure filters them. */
export const CRUD_OPS = ["list", "get", "create", "update", "delete"] as const
export type CrudOp = (typeof CRUD_OPS)[number]

// A row is the fold of its events, so its type lives with them; the catalog's authors name it from here.
export type { Row } from "./events.ts"

/**
 * Returned by a method's `apply` to refuse the command: the domain's own answer (REST 422 `Rejected`, MCP
 * isError), with a code a client can branch on and a message it can show.
 */
export interface Rejection {
  readonly _tag: "Rejection"
  readonly code: string
  readonly message: string
}

/** The code of a refusal made with `reject(message)` alone. */
export const DEFAULT_REJECTION_CODE = "rejected"

/**
 * Refuse a method call with a code and a message:
 * `apply: (book) => book.available === 0 ? reject("no_copies", "no copies available") : { available: book.available - 1 }`.
 * `reject(message)` alone refuses with the code "rejected".
 */
export function reject(message: string): Rejection
export function reject(code: string, message: string): Rejection
export function reject(codeOrMessage: string, message?: string): Rejection {
  return message === undefined
    ? { _tag: "Rejection", code: DEFAULT_REJECTION_CODE, message: codeOrMessage }
    : { _tag: "Rejection", code: codeOrMessage, message }
}

export const isRejection = (u: unknown): u is Rejection =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "Rejection"

/** The fields' values as a method sees them: decoded (a `Schema.Date` is a `Date`, a brand is branded). */
export type FieldValues<F extends Schema.Struct.Fields> = Schema.Struct.Type<F>

/** What a method returns to change its row: some of the fields, decoded. An unknown field is a compile error. */
export type Change<F extends Schema.Struct.Fields> = Partial<FieldValues<F>>

/** A method: a params schema and a pure function from the current row and params to the change. */
export interface MethodSpec<F extends Schema.Struct.Fields, P extends Schema.Struct.Fields> {
  readonly params: P
  readonly description?: string
  /**
   * The fields its change may set. Declared, the writer refuses a change that sets another (the author's bug, as a
   * throw is), and a guarded field's refusal points only at the methods that change that field.
   */
  readonly changes?: ReadonlyArray<Extract<keyof F, string>>
  /**
   * The decision. `row` is what the writer passes: the stored fields decoded through the type's schema (so a
   * `Schema.Date` field is a `Date`), with the row's id and version; `params` are decoded through `params`.
   */
  readonly apply: (row: Row<FieldValues<F>>, params: Schema.Struct.Type<P>) => Change<F> | Rejection | LiteralContext
}

/**
 * A member of `apply`'s result that no value has (its first key is `never`), only there to make the result a
 * literal context: `{ status: "closed" }` infers "closed", not string, without `as const`. TypeScript widens a
 * literal unless its contextual type has a literal of that kind, and while it infers a type's methods it does not
 * yet see the fields' literal types (a method without parameters, or fields with defaults, are checked then). The
 * literal is the message a name that is no field gets.
 */
export interface LiteralContext {
  readonly "writeonce: a method returns some fields of its type, or reject(...)": never
  readonly [field: string]: "writeonce: not a field of this type"
}

/**
 * A rule that holds for every row of a type, checked in the writer on the row after every command of that type
 * (create, update, method, app command) before anything is appended. Its key in `invariants` is the refusal's code.
 */
export interface InvariantSpec<F extends Schema.Struct.Fields> {
  /** True when the row is valid. `row` is decoded, as a method sees it. */
  readonly check: (row: Row<FieldValues<F>>) => boolean
  /** What the refusal says when `check` is false. */
  readonly message: string
}

export interface EntitySpec<F extends Schema.Struct.Fields, M extends Record<string, Schema.Struct.Fields>> {
  readonly description?: string
  readonly fields: F
  readonly methods?: { readonly [K in keyof M]: MethodSpec<F, M[K]> }
  /**
   * Fields only methods change: the generic update refuses them (422, naming the methods), its tool's
   * inputSchema leaves them out, and a create sets them from their default.
   */
  readonly guarded?: ReadonlyArray<Extract<keyof F, string>>
  /** Rules every row of the type obeys, by code: `invariants: { in_stock: { check: (b) => b.available >= 0, message: "..." } }`. */
  readonly invariants?: { readonly [code: string]: InvariantSpec<F> }
  /** Operations served at /api/<type>. Absent: every CRUD op and every method. */
  readonly rest?: ReadonlyArray<CrudOp | Extract<keyof M, string>>
  /** Operations served as MCP tools. Absent: the same as `rest`. */
  readonly mcp?: ReadonlyArray<CrudOp | Extract<keyof M, string>>
  /** The schema version (default 1). Raise it, with a migration, when stored data must change shape. */
  readonly version?: number
  /** `migrations[n]` turns version n-1 data into version n; one for every n from 2 to `version`. */
  readonly migrations?: Migrations
  /**
   * Fields lists filter or order by, indexed on disk from the start (domain/indexes.ts): `["status"]`, or
   * `[["status", "price"]]` for lists filtered by status and ordered by price. Others are indexed on first use.
   */
  readonly indexes?: ReadonlyArray<Extract<keyof F, string> | readonly [Extract<keyof F, string>, Extract<keyof F, string>]>
}

/**
 * A migration: pure, from the encoded (JSON) fields of the previous schema version to this version's. It sees
 * only the fields present: all of them for a create and a stored row, only the changed ones for an update or
 * a method's event. So it must leave absent fields absent (see `renameField` and `mapField`).
 */
export type Migration = (fields: Readonly<Record<string, unknown>>) => Record<string, unknown>

export type Migrations = { readonly [version: number]: Migration }

/** The erased form the runtime works with. */
export interface EntityDef {
  readonly description?: string
  readonly fields: Schema.Struct.Fields
  readonly methods: Readonly<Record<string, MethodSpec<any, any>>>
  readonly guarded?: ReadonlyArray<string>
  readonly invariants?: Readonly<Record<string, InvariantSpec<any>>>
  readonly rest?: ReadonlyArray<string>
  readonly mcp?: ReadonlyArray<string>
  readonly version?: number
  readonly migrations?: Migrations
  readonly indexes?: ReadonlyArray<string | ReadonlyArray<string>>
}

/**
 * An entity type as `entity` returns it: the erased form the runtime reads, which also keeps the declared
 * fields and methods in its type, so that `defineApp` and the decider specs can check names and values.
 */
export interface Entity<F extends Schema.Struct.Fields, M extends Record<string, Schema.Struct.Fields>> extends EntityDef {
  readonly fields: F
  readonly methods: { readonly [K in keyof M]: MethodSpec<F, M[K]> }
}

export interface AppDef {
  readonly name: string
  readonly description?: string
  readonly entities: Readonly<Record<string, EntityDef>>
  /**
   * Types the app no longer declares but whose events stay in the log. Without this, a type that is gone
   * while the log holds its events refuses startup; retired, its history is kept and its rows are not served.
   */
  readonly retired?: ReadonlyArray<string>
  /** Declared projections (read models), by name: see `view`. */
  readonly views?: Readonly<Record<string, ViewDef>>
  /** Commands across entity types, each one atomic: see `CommandSpec`. */
  readonly commands?: Readonly<Record<string, CommandDef>>
}

// --- Commands across entities ------------------------------------------------------------------------------------

/**
 * One change a command makes, built with the context's `create`, `update`, `remove` and `invoke`. Inputs are
 * what a client would send to the same operation (encoded, JSON-shaped); they go through the same Schema decode.
 */
export type CommandChange =
  | { readonly _tag: "Create"; readonly type: string; readonly input: Readonly<Record<string, unknown>> }
  | { readonly _tag: "Update"; readonly type: string; readonly id: string; readonly input: Readonly<Record<string, unknown>> }
  | { readonly _tag: "Delete"; readonly type: string; readonly id: string }
  | { readonly _tag: "Invoke"; readonly type: string; readonly id: string; readonly method: string; readonly input: Readonly<Record<string, unknown>> }

type EntityFields<E extends EntityDef> = E["fields"]
type EntityMethods<E extends EntityDef> = E["methods"]
type MethodParams<E extends EntityDef, K extends keyof EntityMethods<E>> = EntityMethods<E>[K] extends MethodSpec<any, infer P> ? P : never

/** What a command's `decide` reads rows with and builds its changes with, typed from the app's entity types. */
export interface CommandContext<E extends Readonly<Record<string, EntityDef>>> {
  /** The row as it is now (decoded, as a method sees it; changes made earlier in this command are not visible), or undefined. */
  readonly get: <T extends Extract<keyof E, string>>(type: T, id: string) => Row<FieldValues<EntityFields<E[T]>>> | undefined
  readonly create: <T extends Extract<keyof E, string>>(type: T, input: Schema.Struct.Encoded<EntityFields<E[T]>>) => CommandChange
  readonly update: <T extends Extract<keyof E, string>>(type: T, id: string, input: Partial<Schema.Struct.Encoded<EntityFields<E[T]>>>) => CommandChange
  readonly remove: <T extends Extract<keyof E, string>>(type: T, id: string) => CommandChange
  readonly invoke: <T extends Extract<keyof E, string>, K extends Extract<keyof EntityMethods<E[T]>, string>>(
    type: T,
    id: string,
    method: K,
    ...params: keyof MethodParams<E[T], K> extends never ? [] : [Schema.Struct.Encoded<MethodParams<E[T], K>>]
  ) => CommandChange
}

/**
 * A command across entity types: `decide` reads rows and returns the changes to make (at most one per row), or
 * a refusal. All of its events land in one atomic write; each carries the command's name and one correlation id.
 * Served as `POST /api/_commands/<name>` and as the MCP tool `<name>`.
 */
export interface CommandSpec<E extends Readonly<Record<string, EntityDef>>, P extends Schema.Struct.Fields> {
  readonly description?: string
  readonly params: P
  readonly decide: (ctx: CommandContext<E>, params: Schema.Struct.Type<P>) => ReadonlyArray<CommandChange> | Rejection
  /** Served over REST (default true). */
  readonly rest?: boolean
  /** Served as an MCP tool (default: as `rest`). */
  readonly mcp?: boolean
}

/** The erased form the runtime works with. */
export interface CommandDef {
  readonly description?: string
  readonly params: Schema.Struct.Fields
  readonly decide: (ctx: CommandContext<any>, params: any) => ReadonlyArray<CommandChange> | Rejection
  readonly rest?: boolean
  readonly mcp?: boolean
}

/**
 * What `fields` becomes when TypeScript could not infer it, instead of an index signature of `any` that would
 * switch type checking off in every method. It happens with a dual Effect function called data-first inline,
 * such as `done: Schema.optionalWith(Schema.Boolean, { default: () => false })`: TypeScript defers such calls
 * while it types the methods, so it fixes the fields before it has seen them. The pipeable form,
 * `Schema.Boolean.pipe(Schema.optionalWith({ default: () => false }))`, or fields declared in a const before
 * `entity(...)`, are inferred. The long property name is the message the compiler shows.
 */
export type FieldsNotInferred = {
  readonly "writeonce: fields not inferred; write Schema.X.pipe(Schema.optionalWith({...})), or declare the fields in a const": typeof Schema.Never
}

/**
 * Declare one entity type. `apply` is typed from `fields` and `params`, and the result keeps both in its type.
 * (`NoInfer` on the result: the erased type `defineApp` expects must not stand in for fields TypeScript could
 * not infer; `FieldsNotInferred` does, loudly.)
 */
export const entity = <
  F extends Schema.Struct.Fields = FieldsNotInferred,
  M extends Record<string, Schema.Struct.Fields> = {}
>(spec: EntitySpec<F, M>): Entity<NoInfer<F>, NoInfer<M>> => ({
  description: spec.description,
  fields: spec.fields,
  methods: (spec.methods ?? {}) as Entity<F, M>["methods"],
  guarded: spec.guarded,
  invariants: spec.invariants,
  rest: spec.rest,
  mcp: spec.mcp,
  version: spec.version,
  migrations: spec.migrations,
  indexes: spec.indexes
})

// --- References checked against the app ---------------------------------------------------------------------------

/** The type names the `ref`s in one field's or param's schema name (through optional, optionalWith and unions). */
type RefTargets<S> =
  | (S extends { readonly "~writeonce/ref"?: infer T extends string } ? string extends T ? never : T : never)
  | (S extends { readonly from: infer Inner } ? RefTargets<Inner> : never)
  | (S extends { readonly members: ReadonlyArray<infer Member> } ? RefTargets<Member> : never)

/** Each field or param whose `ref` names no entity type of the app, as a type nothing is assignable to, saying so. */
type CheckedRefs<F, Names> = {
  readonly [K in keyof F]: [Exclude<RefTargets<F[K]>, Names>] extends [never] ? unknown
    : `writeonce: ref("${Exclude<RefTargets<F[K]>, Names> & string}") names no entity type of this app`
}

/** The entity types, with every `ref` in their fields and their methods' params checked against the app's names. */
type EntitiesWithRefsChecked<E extends EntityMap> = {
  readonly [T in keyof E]: {
    readonly fields: CheckedRefs<E[T]["fields"], keyof E>
    readonly methods: { readonly [M in keyof E[T]["methods"]]: { readonly params: CheckedRefs<E[T]["methods"][M]["params"], keyof E> } }
  }
}

/** The views of an app whose entity types are `E`, by name. */
export type ViewsFor<E extends EntityMap> = { readonly [name: string]: View<E, ViewOn<E>, Schema.Schema<any, any, never>> }

/**
 * An app as `defineApp` takes it: `commands` and `views` are typed from `entities` (see `CommandSpec`, `view`);
 * `V`, the views, is kept with their names and value schemas.
 */
export type AppInput<E extends Readonly<Record<string, EntityDef>>, C extends Record<string, Schema.Struct.Fields>, V extends ViewsFor<E> = ViewsFor<E>> =
  & Omit<AppDef, "entities" | "commands" | "views">
  & {
    readonly entities: E
    readonly commands?:
      & { readonly [K in keyof C]: CommandSpec<E, C[K]> }
      & NoInfer<{ readonly [K in keyof C]: { readonly params: CheckedRefs<C[K], keyof E> } }>
    /**
     * Declared projections, by name: see `view`. Each view's `on` is checked against `entities`; written as a
     * function of `view`, `views: (view) => ({ ... })`, its `evolve` sees typed rows too.
     */
    readonly views?: V | ((view: ViewBuilder<E>) => V)
  }

/** An app as `defineApp` returns it: an `AppDef` that keeps its entity types and commands in its type. */
export type App<
  E extends Readonly<Record<string, EntityDef>>,
  C extends Record<string, Schema.Struct.Fields>,
  V extends Readonly<Record<string, ViewDef>> = Readonly<Record<string, ViewDef>>
> =
  & Omit<AppDef, "entities" | "commands" | "views">
  & { readonly entities: E; readonly commands: { readonly [K in keyof C]: CommandSpec<E, C[K]> }; readonly views?: V }

/**
 * Declare an app. The result keeps the app's type (entity names, fields, methods and their params, commands, the
 * views' names and value schemas), so that commands, the decider specs and the typed in-process API
 * (embedding/write-once.ts) check names and values; it is still an `AppDef`. Validation happens
 * when the runtime loads it (see `compileApp`).
 */
export const defineApp = <
  const E extends Readonly<Record<string, EntityDef>>,
  const C extends Record<string, Schema.Struct.Fields> = {},
  const V extends ViewsFor<E> = {}
>({ views, ...app }: AppInput<E, C, V> & NoInfer<{ readonly entities: EntitiesWithRefsChecked<E> }>): App<E, C, V> => ({
  ...app,
  commands: (app.commands ?? {}) as App<E, C, V>["commands"],
  ...(views === undefined ? {} : { views: typeof views === "function" ? views(view as ViewBuilder<E>) : views })
})

/** What a view's `evolve` folds: one committed event, with its row just before and just after it. */
export interface ViewChange {
  /** The event: `type`, `id`, `kind` ("created", "updated", "deleted", "invoked"), `method`, `params`, `seq`, `at`. */
  readonly event: StoredEvent
  /** The row before the event, as served (`{id, version, ...fields}`, encoded); null for a create. */
  readonly before: Row | null
  /** The row after the event; null for a delete. */
  readonly after: Row | null
}

/** The entity types of an app, by name, as `defineApp` keeps them. */
type EntityMap = Readonly<Record<string, EntityDef>>

/** The event kinds a view's `on` names (besides a type's method names, each its own "invoked" event). */
export type ViewEventKind = "created" | "updated" | "deleted" | "invoked"

/** What a view's `on` may name: the app's types, each with its event kinds and method names. */
export type ViewOn<E extends EntityMap> = {
  readonly [T in keyof E]?: ReadonlyArray<ViewEventKind | Extract<keyof E[T]["methods"], string>>
}

/** A row as a view sees it: as served, encoded (`{id, version, ...fields}`); any fields for an erased type. */
type ServedRow<D extends EntityDef> = string extends keyof D["fields"] ? Row : Row<Schema.Struct.Encoded<D["fields"]>>

/** One change of a row of type `T`, typed from its declaration. */
export interface TypedViewChange<E extends EntityMap, T extends keyof E & string> extends ViewChange {
  readonly event: StoredEvent & { readonly type: T }
  readonly before: ServedRow<E[T]> | null
  readonly after: ServedRow<E[T]> | null
}

/** What `evolve` folds: a change of one of the types `on` names (a union when it names several). */
export type ViewChangeOf<E extends EntityMap, On> = string extends keyof E ? ViewChange
  : { readonly [T in keyof On & keyof E & string]: TypedViewChange<E, T> }[keyof On & keyof E & string]

/**
 * A view (a declared projection): a pure fold of the log into one value. `on` names the events it folds, per
 * type: event kinds ("created", "updated", "deleted", "invoked" for every method) or method names
 * ("set_price"). `evolve` must be pure and fast, and must not change its arguments: it runs inside the writer.
 * Declared in `views: (view) => ({ ... })`, `on` is checked against the app's types and their methods, and
 * `evolve`'s rows are typed.
 */
export interface ViewSpec<S extends Schema.Schema<any, any, never>, E extends EntityMap = EntityMap, On extends ViewOn<E> = ViewOn<E>> {
  readonly description?: string
  /** The value's schema: checked after every batch, and what REST, MCP and the tool's outputSchema describe. */
  readonly schema: S
  /** The value before any event. */
  readonly initial: Schema.Schema.Type<S>
  readonly on: On
  readonly evolve: (state: Schema.Schema.Type<S>, change: ViewChangeOf<E, On>) => Schema.Schema.Type<S>
  /**
   * The view's version (default 1). A stored value is trusted while the view's declaration (`on`, `initial`,
   * `schema`, `version`) is unchanged; raise it when `evolve` computes something else, so that the next start
   * folds the view again from the log. (`wo replay --app` shows a value that no longer matches the fold.)
   */
  readonly version?: number
}

/**
 * A keyed view: one entry per key instead of one value. `key` names the entry a change touches (undefined: the
 * change does not touch the view); `evolve` folds the change into that entry alone (`initial` before its first
 * change) and answers the next entry, or undefined to remove it. Keys are non-empty strings of at most
 * `MAX_VIEW_KEY_LENGTH` characters, without control characters: a key that is not one fails the view, as a
 * throwing evolve does. Each entry is stored on its own, in the batch that changed it, and read through a bounded
 * cache: a write costs the keys it changes, whatever the number of keys, and startup reads no entry.
 */
export interface KeyedViewSpec<S extends Schema.Schema<any, any, never>, E extends EntityMap = EntityMap, On extends ViewOn<E> = ViewOn<E>> {
  readonly description?: string
  /** One entry's schema: checked for every changed entry, and what REST, MCP and the tools describe per key. */
  readonly schema: S
  /** The entry before its first change. */
  readonly initial: Schema.Schema.Type<S>
  readonly on: On
  /** The key of the entry the change touches; undefined when it touches none. Pure, like evolve. */
  readonly key: (change: ViewChangeOf<E, On>) => string | undefined
  /** The entry after the change; undefined removes it. It gets a copy of the entry and of the change. */
  readonly evolve: (entry: Schema.Schema.Type<S>, change: ViewChangeOf<E, On>) => Schema.Schema.Type<S> | undefined
  /** As for a whole view: raise it when `key` or `evolve` compute something else, to fold the view again. */
  readonly version?: number
}

/** The longest key a keyed view may give an entry (in UTF-16 code units). */
export const MAX_VIEW_KEY_LENGTH = 256

/** The erased form the runtime works with. */
export interface ViewDef {
  readonly description?: string
  readonly schema: Schema.Schema<any, any, never>
  readonly initial: unknown
  readonly on: { readonly [type: string]: ReadonlyArray<string> }
  readonly evolve: (state: any, change: ViewChange) => unknown
  /** Present on a keyed view (see `KeyedViewSpec`). */
  readonly key?: (change: ViewChange) => string | undefined
  readonly version?: number
}

/**
 * A view as `view` returns it: the erased form, which remembers in its type the entity types it was declared for
 * (read from where it is used: `defineApp`'s `views`) and its value's schema. A view declared for no app in
 * particular fits any app.
 */
export interface View<E extends EntityMap = EntityMap, On = unknown, S extends Schema.Schema<any, any, never> = Schema.Schema<any, any, never>> extends ViewDef {
  /** The value's schema, kept in the type (the typed in-process API decodes a view's value by it). */
  readonly schema: S
  readonly "~writeonce/entities"?: (entities: E) => void
  /** What its `on` names, for `defineApp` to check against the app's types (also in the object form). */
  readonly "~writeonce/on"?: On
}

/** A keyed view as `view` returns it: a `View` whose `key` is there (its schema is one entry's). */
export interface KeyedView<E extends EntityMap = EntityMap, On = unknown, S extends Schema.Schema<any, any, never> = Schema.Schema<any, any, never>> extends View<E, On, S> {
  readonly key: (change: ViewChange) => string | undefined
}

/**
 * Declare a view: `views: { articles_by_status: view({ schema, initial, on: { articles: ["created", ...] },
 * evolve }) }`. It is maintained on commit (read-your-writes), served at `GET /api/_views/<name>`, as the MCP
 * resource `wo://views/<name>` and the tool `view_<name>`, and rebuilt from the log by `wo replay --app`.
 * With `key`, the view is keyed (see `KeyedViewSpec`): one entry per key, served per key
 * (`wo://views/<name>/<key>`) and as a paged list.
 * Its entity types are read from where it is used: in `defineApp({ views: (view) => ({ ... }) })` they are the
 * app's; elsewhere (a view declared apart, the object form `views: { ... }`) it takes any type, its rows untyped.
 */
export function view<S extends Schema.Schema<any, any, never>, E extends EntityMap = EntityMap, const On extends ViewOn<E> = ViewOn<E>>(
  spec: KeyedViewSpec<S, NoInfer<E>, On>
): KeyedView<E, On, S>
export function view<S extends Schema.Schema<any, any, never>, E extends EntityMap = EntityMap, const On extends ViewOn<E> = ViewOn<E>>(
  spec: ViewSpec<S, NoInfer<E>, On>
): View<E, On, S>
export function view(spec: unknown): unknown {
  return spec
}

/** `view` for the entity types `E`: what `defineApp` passes to `views: (view) => ({ ... })`. */
export interface ViewBuilder<E extends EntityMap> {
  <S extends Schema.Schema<any, any, never>, const On extends ViewOn<E>>(spec: KeyedViewSpec<S, E, On>): KeyedView<E, On, S>
  <S extends Schema.Schema<any, any, never>, const On extends ViewOn<E>>(spec: ViewSpec<S, E, On>): View<E, On, S>
}
