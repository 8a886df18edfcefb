/**
 * The events and commands of one entity type, typed from its declaration, as the decider specs and the command
 * specs write them.
 */
import type { Schema } from "effect"
import type { AppDef, EntityDef, MethodSpec } from "../domain/catalog.ts"
import type { Fields, SpecEvent } from "./spec-support.ts"

// An entity declared with `entity(...)` inside `defineApp(...)` keeps its fields and methods in its type; these
// turn them into the events and commands a spec may write. An erased `EntityDef` (an app typed as `AppDef`) gives
// the erased forms (`SpecEvent`, and `SpecCommand` in decider-spec.ts), so untyped apps keep working.

type FieldsOf<E extends EntityDef> = E["fields"]
type IsErased<E extends EntityDef> = string extends keyof FieldsOf<E> ? true : false
/** The fields as a client sends them and the log stores them (encoded): a create's body. */
type Encoded<E extends EntityDef> = IsErased<E> extends true ? Fields : Schema.Struct.Encoded<FieldsOf<E>>
type MethodName<E extends EntityDef> = string extends keyof E["methods"] ? string : Extract<keyof E["methods"], string>
/** A method's params as a client sends them; `{}` params take no keys at all. */
type ParamsOf<E extends EntityDef, K extends string> = string extends keyof E["methods"] ? Fields
  : E["methods"][K] extends MethodSpec<any, infer P> ? keyof P extends never ? { readonly [k: string]: never } : Schema.Struct.Encoded<P>
  : never

/** The events of entity type `E`, typed from its declaration. */
export type SpecEventOf<E extends EntityDef> =
  | { readonly kind: "created"; readonly data: Encoded<E> }
  | { readonly kind: "updated"; readonly data: Partial<Encoded<E>> }
  | { readonly kind: "deleted"; readonly data?: Fields }
  | {
    readonly [K in MethodName<E>]: {
      readonly kind: "invoked"
      readonly method: K
      readonly data: Partial<Encoded<E>>
      readonly params?: ParamsOf<E, K>
    }
  }[MethodName<E>]

/** A given event written at an older schema version: its fields are that version's, so they are not typed. */
export type OlderEvent = SpecEvent & { readonly schema: number }

/** The commands for entity type `E`, typed from its declaration. */
export type SpecCommandOf<E extends EntityDef> =
  | { readonly _tag: "Create"; readonly input: Encoded<E> }
  | { readonly _tag: "Update"; readonly input: Partial<Encoded<E>>; readonly expectedVersion?: number }
  | { readonly _tag: "Delete"; readonly expectedVersion?: number }
  | {
    readonly [K in MethodName<E>]: {
      readonly _tag: "Invoke"
      readonly method: K
      readonly input: ParamsOf<E, K>
      readonly expectedVersion?: number
    }
  }[MethodName<E>]

/** The events of type `T` of app `A`: `const pen: EventOf<typeof app, "products"> = created({ ... })`. */
export type EventOf<A extends AppDef, T extends keyof A["entities"]> = SpecEventOf<A["entities"][T]>
/** The commands of type `T` of app `A`. */
export type CommandOf<A extends AppDef, T extends keyof A["entities"]> = SpecCommandOf<A["entities"][T]>
