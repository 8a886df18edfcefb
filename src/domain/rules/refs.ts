/**
 * References between entity types: a field declared `ref("books")` holds the id of a live `books` row. The
 * writer checks it on every write that sets it, and refuses to delete a row that live rows still reference.
 */
import { Option, Schema, SchemaAST } from "effect"

/** The annotation that marks a string field as a reference, with the referenced type as its value. */
export const RefTypeId: unique symbol = Symbol.for("writeonce/ref")

/**
 * What a `ref` schema carries in its type (nothing at run time): the referenced type's name, which `defineApp`
 * checks against the app's entity types, so that `ref("bokos")` is a compile error.
 */
export interface RefTo<T extends string> {
  readonly "~writeonce/ref"?: T
}

/** A field holding the id of a row of `type`: `book: ref("books")` (optional: `ref("books").pipe(Schema.optional)`). */
export const ref = <T extends string>(type: T): typeof Schema.String & RefTo<T> =>
  Schema.String.annotations({ [RefTypeId]: type, description: `the id of a row of ${type}` }) as typeof Schema.String & RefTo<T>

/** The type a schema references, when it is a `ref` (also through NullOr/optional wrappers: see compile). */
export const refTarget = (ast: SchemaAST.AST): string | undefined =>
  Option.getOrUndefined(SchemaAST.getAnnotation<string>(ast, RefTypeId))
