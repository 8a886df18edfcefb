/**
 * How every `wo` command ends, whichever parser read its command line (cli.ts, or serve-args.ts for `wo run` and
 * `wo dev`): an expected failure prints one `wo: ...` line and exits 1 (a wrong command line: 2); anything else
 * is a bug and prints its cause. Runs on Node with the runtime's logger and the command line's Console.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Data, Effect, Layer } from "effect"
import { isStoreError } from "../domain/errors.ts"
import { LoggerLive } from "../runtime/logger.ts"
import { PlainConsoleLive } from "./plain-console.ts"

/** A wrong command line, found by a command itself: one line, exit 2. */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

/** Prints `wo: <message>` and exits with `code` (1: the command failed). */
export const fatal = (message: string, code = 1) => Effect.zipRight(Console.error(`wo: ${message}`), Effect.sync(() => process.exit(code)))

/** The failures a command expects (with every store error), by tag, and how each is told: the exit code, and ConfigError's own wording. */
const EXPECTED: Readonly<Record<string, 1 | 2>> = {
  AppLoadError: 1,
  CatalogError: 1,
  SchemaMismatch: 1,
  InitError: 1,
  ListenError: 1,
  AccessFileError: 1,
  ConfigError: 1,
  UsageError: 2 // as a shell's builtins and most CLIs do
}

type Expected = { readonly _tag: string; readonly message?: string }

const isExpected = (e: unknown): e is Expected =>
  isStoreError(e) || (typeof e === "object" && e !== null && typeof (e as Expected)._tag === "string" && Object.hasOwn(EXPECTED, (e as Expected)._tag))

/** Runs a command's program to its end: expected failures as one line and their exit code. */
export const runCommand = <E>(program: Effect.Effect<unknown, E>) =>
  program.pipe(
    Effect.catchAll((e) =>
      isExpected(e) ? fatal(e._tag === "ConfigError" ? `configuration: ${String(e)}` : e.message ?? e._tag, EXPECTED[e._tag] ?? 1) : Effect.fail(e)),
    Effect.provide(Layer.mergeAll(LoggerLive, PlainConsoleLive)),
    NodeRuntime.runMain({ disablePrettyLogger: true })
  )
