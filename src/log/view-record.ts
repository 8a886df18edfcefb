/**
 * A view's stored record (`v!<name>`): `{"definition":"<digest>","seq":<n>,"value":<JSON>}`, or with
 * `"failed":"<why>"` instead of a value once its evolve threw. `seq` is the log sequence of the value's last
 * change. The record is written in the batch that changed the value, so it always holds the state as of the
 * store's checkpoint; `definition` is the digest of the view's declaration (`on`, `initial`, `schema`,
 * `version`), so a record written by another declaration is folded again from the log instead of trusted.
 */
import { Either, Schema } from "effect"
import { createHash } from "node:crypto"
import type { CompiledView } from "../domain/compile-views.ts"

export const ViewRecordSchema = Schema.Struct({
  definition: Schema.String,
  seq: Schema.Int.pipe(Schema.nonNegative()),
  value: Schema.optional(Schema.Unknown),
  failed: Schema.optional(Schema.String)
})
export type ViewRecordPayload = typeof ViewRecordSchema.Type

const decodeRecord = Schema.decodeUnknownEither(ViewRecordSchema)

/** The record's fields, or why it is not a view record. */
export const parseViewRecord = (record: unknown): Either.Either<ViewRecordPayload, string> =>
  Either.mapLeft(decodeRecord(record), (e) => e.message.split("\n").slice(-1)[0].trim())

/** The stored JSON text: `valueJson` is the value's JSON text, already encoded through the view's schema. */
export const viewRecordJson = (definition: string, seq: number, outcome: { readonly valueJson: string } | { readonly failed: string }) =>
  "valueJson" in outcome
    ? `{"definition":${JSON.stringify(definition)},"seq":${seq},"value":${outcome.valueJson}}`
    : `{"definition":${JSON.stringify(definition)},"seq":${seq},"failed":${JSON.stringify(outcome.failed)}}`

/** The digest of a view's declaration: what it folds, its initial value, its schema and its version. */
export const viewDefinition = (view: CompiledView) => createHash("sha256").update(view.declaration).digest("hex").slice(0, 16)
