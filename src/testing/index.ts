/**
 * `writeonce/testing`: the test harness for app authors, which `wo test` runs. Decider specs (business rules
 * without I/O) and transcripts (recorded HTTP sessions replayed against a fresh server; format in
 * docs/transcripts.md).
 */
export {
  create,
  created,
  DeciderSpecification,
  deleted,
  invoke,
  invoked,
  remove,
  SpecFailed,
  update,
  updated,
  type CommandOf,
  type EventOf,
  type Given,
  type GivenEvents,
  type OlderEvent,
  type SpecCommand,
  type SpecCommandOf,
  type SpecEvent,
  type SpecEventOf,
  type WhenResult,
  type Written
} from "./decider-spec.ts"
export {
  type CommandName,
  type CommandParams,
  type CommandWhenResult,
  type DecidedRows,
  type GivenCommand,
  type GivenRows,
  type GivenRowsOf
} from "./command-spec.ts"
export { spec, type Spec } from "./spec.ts"
export {
  matchJson,
  matchResponse,
  matchText,
  parseTranscript,
  prepareRequest,
  replayTranscript,
  TranscriptSyntaxError,
  type ActualResponse,
  type Exchange,
  type ExpectedResponse,
  type ReplayOptions,
  type ReplayResult,
  type Transcript,
  type TranscriptRequest,
  type Vars
} from "./transcript/index.ts"
export { runTranscript, settingsForRun, type TranscriptRunOptions } from "./transcript-run.ts"
export { findSpecFiles, findTranscripts, testApp, type AppTestReport, type TestOptions, type TestResult } from "./app-tests.ts"
export { typecheckApp, type TypecheckResult } from "./typecheck.ts"
export { junitXml, tapHeader, tapResult, tapSummary } from "./reporters.ts"
