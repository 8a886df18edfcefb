/**
 * A view's stored record (`v!<name>`): `{"definition":"<digest>","seq":<n>,"value":<JSON>}`, or with
 * `"failed":"<why>"` instead of a value once its evolve threw. `seq` is the log sequence of the value's last
 * change. A record written in the batch that changed the value holds the state as of the store's checkpoint; a
 * record written on its own (a PostgreSQL node's snapshot, a view folded again in the background) names the seq it
 * is folded to, `"at":<n>`: it is exact at that seq, and the events after it are folded on top (or, with no way to,
 * the view is folded again). `definition` is the digest of the view's declaration (`on`, `initial`, `schema`,
 * `version`), so a record written by another declaration is folded again from the log instead of trusted.
 */
import { Either, Schema } from "effect"
import { createHash } from "node:crypto"
import type { CompiledView } from "../domain/compile-views.ts"

export const ViewRecordSchema = Schema.Struct({
  definition: Schema.String,
  seq: Schema.Int.pipe(Schema.nonNegative()),
  at: Schema.optional(Schema.Int.pipe(Schema.nonNegative())),
  value: Schema.optional(Schema.Unknown),
  failed: Schema.optional(Schema.String)
})
export type ViewRecordPayload = typeof ViewRecordSchema.Type

const decodeRecord = Schema.decodeUnknownEither(ViewRecordSchema)

/** The record's fields, or why it is not a view record. */
export const parseViewRecord = (record: unknown): Either.Either<ViewRecordPayload, string> =>
  Either.mapLeft(decodeRecord(record), (e) => e.message.split("\n").slice(-1)[0].trim())

/**
 * The stored JSON text: `valueJson` is the value's JSON text, already encoded through the view's schema; `at`, for a
 * record written outside a batch, the seq it is folded to.
 */
export const viewRecordJson = (definition: string, seq: number, outcome: { readonly valueJson: string } | { readonly failed: string }, at?: number) => {
  const head = `{"definition":${JSON.stringify(definition)},"seq":${seq}${at === undefined ? "" : `,"at":${at}`}`
  return "valueJson" in outcome ? `${head},"value":${outcome.valueJson}}` : `${head},"failed":${JSON.stringify(outcome.failed)}}`
}

/** The digest of a view's declaration: what it folds, its initial value, its schema and its version. */
export const viewDefinition = (view: CompiledView) => createHash("sha256").update(view.declaration).digest("hex").slice(0, 16)
