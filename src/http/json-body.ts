/** Request body decoding through Schema, shared by REST and MCP. */
import { Either, Schema } from "effect"

const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())

/** True when the Content-Type names JSON (parameters such as charset allowed). */
export const isJsonContentType = (value: string | undefined) =>
  value !== undefined && /^application\/json\s*(;|$)/i.test(value.trim())

/** Parses a JSON body; Left carries the parser's message. */
export const parseJsonBody = (body: Buffer): Either.Either<unknown, string> =>
  Either.mapLeft(decodeJson(body.toString("utf8")), (e) => e.message.split("\n").slice(-1)[0].replace(/^[\s└─]+/, ""))
