/**
 * Transcripts: recorded HTTP exchanges in a readable, diffable text file (`*.http`), replayed against a live
 * server. The file format, placeholders and matching rules are described in docs/transcripts.md; `wo test`
 * (app-tests.ts) and this project's own test/transcripts.test.ts both replay through `runTranscript`.
 *
 * parse.ts reads a file, match.ts holds the placeholders and matching, compare.ts compares one response,
 * send.ts sends one request, replay.ts runs them all.
 */
export { isEventStream } from "../../support/sse.ts"
export { lineDiff } from "../line-diff.ts"
export { type ActualResponse, expectedEvents, matchResponse } from "./compare.ts"
export { type JsonMatch, matchJson, matchText, type Vars } from "./match.ts"
export {
  type Exchange,
  type ExpectedResponse,
  parseTranscript,
  type ReadLimit,
  type Transcript,
  type TranscriptRequest,
  TranscriptSyntaxError
} from "./parse.ts"
export { replayTranscript, type ReplayOptions, type ReplayResult } from "./replay.ts"
export { prepareRequest } from "./send.ts"
