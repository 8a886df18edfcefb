/**
 * The names and values of an app, read from the type `defineApp` returns: its entity types, their fields,
 * methods and params, its commands and its views. An app typed as `AppDef` (erased) takes any name and any value.
 *
 * Values are as a client sends and reads them (encoded, JSON-shaped), as REST, MCP and a command's context take
 * them: the writer decodes each input once, through the type's own schema.
 */
import type { Schema } from "effect"
import type { AppDef, MethodSpec, Row } from "../domain/catalog.ts"

/** The app's entity type names. */
export type TypeName<A extends AppDef> = Extract<keyof A["entities"], string>

type FieldsOf<A extends AppDef, T extends TypeName<A>> = A["entities"][T]["fields"]
type MethodsOf<A extends AppDef, T extends TypeName<A>> = A["entities"][T]["methods"]

/** A row of type T as every surface serves it: id, version and the fields, encoded. */
export type RowOf<A extends AppDef, T extends TypeName<A>> = Row<Schema.Struct.Encoded<FieldsOf<A, T>>>

/** A create's body: the fields as a client sends them (fields with a default may be left out). */
export type CreateInput<A extends AppDef, T extends TypeName<A>> = Schema.Struct.Encoded<FieldsOf<A, T>>

/** An update's body: some of the fields. */
export type UpdateInput<A extends AppDef, T extends TypeName<A>> = Partial<Schema.Struct.Encoded<FieldsOf<A, T>>>

/** The methods of type T. */
export type MethodName<A extends AppDef, T extends TypeName<A>> = Extract<keyof MethodsOf<A, T>, string>

type ParamFields<A extends AppDef, T extends TypeName<A>, M extends MethodName<A, T>> = MethodsOf<A, T>[M] extends MethodSpec<any, infer P> ? P : never

/** A method's params as a client sends them. */
export type MethodParams<A extends AppDef, T extends TypeName<A>, M extends MethodName<A, T>> = Schema.Struct.Encoded<ParamFields<A, T, M>>

/**
 * The params argument of a call, then its options: required when the params have a required key, optional when
 * they have none (`invoke("tickets", id, "close")`).
 */
export type ParamsAndOptions<P, O> = {} extends P ? [params?: P, options?: O] : [params: P, options?: O]

type CommandsOf<A extends AppDef> = NonNullable<A["commands"]>

/** The app's commands (commands across entity types). */
export type CommandName<A extends AppDef> = Extract<keyof CommandsOf<A>, string>

/** A command's params as a client sends them. */
export type CommandParams<A extends AppDef, K extends CommandName<A>> = string extends CommandName<A> ? Readonly<Record<string, unknown>>
  : Schema.Struct.Encoded<CommandsOf<A>[K]["params"]>

type ViewsOf<A extends AppDef> = NonNullable<A["views"]>

/** The app's views. */
export type ViewName<A extends AppDef> = Extract<keyof ViewsOf<A>, string>

/** A view's value, decoded through its schema (`unknown` for an app typed as `AppDef`). */
export type ViewValue<A extends AppDef, V extends ViewName<A>> = string extends ViewName<A> ? unknown
  : ViewsOf<A>[V]["schema"] extends Schema.Schema<infer T, any, any> ? T : unknown

/** The value a filter compares a field with: a value of the field, or null (absent). */
type FilterValue<X> = X | null

/**
 * A list's filters, by field, as MCP's `<type>_list` takes them: `{ status: "open" }`. The operators
 * (`{ price: { gte: 10 } }`, `{ status: { in: [...] } }`) are the ones REST and MCP accept.
 */
export type Where<A extends AppDef, T extends TypeName<A>> = {
  readonly [K in keyof Schema.Struct.Encoded<FieldsOf<A, T>>]?:
    | FilterValue<Schema.Struct.Encoded<FieldsOf<A, T>>[K]>
    | { readonly [op: string]: FilterValue<Schema.Struct.Encoded<FieldsOf<A, T>>[K]> | ReadonlyArray<Schema.Struct.Encoded<FieldsOf<A, T>>[K]> | boolean }
}

type Sortable<A extends AppDef, T extends TypeName<A>> = "id" | Extract<keyof Schema.Struct.Encoded<FieldsOf<A, T>>, string>

/** A list's order: a field, ascending, or `-field`, descending. */
export type OrderBy<A extends AppDef, T extends TypeName<A>> = Sortable<A, T> | `-${Sortable<A, T>}`

/** A list request, in the shape REST and MCP take: `{ where: { status: "open" }, order: "-id", limit: 20, cursor }`. */
export interface ListOptions<A extends AppDef, T extends TypeName<A>> {
  readonly where?: Where<A, T>
  readonly order?: OrderBy<A, T>
  readonly limit?: number
  readonly cursor?: string
}

/** One page of a list: its rows and, when more follow, the cursor of the next page. */
export interface PageOf<R> {
  readonly items: ReadonlyArray<R>
  readonly nextCursor?: string
  /** True when the page read only part of the rows (an index still being built); `nextCursor` continues it. */
  readonly partial?: true
}
