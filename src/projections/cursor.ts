/** Opaque page cursors: base64url of `{"t":<type>,"a":<last id>}`, decoded through Schema like any wire input. */
import { Either, Schema } from "effect"

const CursorJson = Schema.parseJson(Schema.Struct({ t: Schema.String, a: Schema.Int.pipe(Schema.nonNegative()) }))
const decodeCursorJson = Schema.decodeUnknownEither(CursorJson)

export const encodeCursor = (type: string, afterId: number): string =>
  Buffer.from(JSON.stringify({ t: type, a: afterId })).toString("base64url")

/** The id to continue after, or undefined when the cursor is not one this server issued for `type`. */
export const decodeCursor = (type: string, cursor: string): number | undefined => {
  const decoded = decodeCursorJson(Buffer.from(cursor, "base64url").toString("utf8"))
  return Either.isRight(decoded) && decoded.right.t === type ? decoded.right.a : undefined
}
