/** The transcript harness lives in src/testing (it is `writeonce/testing`, which `wo test` runs); the format is in docs/transcripts.md. */
export * from "../../src/testing/transcript/index.ts"
export { runTranscript, settingsForRun } from "../../src/testing/transcript-run.ts"
