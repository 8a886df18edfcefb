/**
 * The command line's Console: @effect/cli prints its help and usage errors with ANSI styles, which belong on a
 * terminal only. Off a TTY, or with NO_COLOR set (https://no-color.org), they are stripped; and a message ends at its
 * last line (@effect/cli adds blank lines after a usage error or the version).
 */
import { Console, Effect } from "effect"

// The SGR sequences (styles and colours) @effect/cli's printer writes.
const ANSI = /\x1b\[[0-9;]*m/g

const colour = (stream: NodeJS.WriteStream) => stream.isTTY === true && (process.env.NO_COLOR ?? "") === ""

const tidy = (keepStyles: boolean) => (arg: unknown) => {
  if (typeof arg !== "string") return arg
  const text = arg.replace(/\n+$/, "")
  return keepStyles ? text : text.replace(ANSI, "")
}

/** The default Console with `log` and `error` tidied for their streams. */
export const PlainConsoleLive = Console.setConsole(
  (() => {
    const base = Effect.runSync(Console.consoleWith(Effect.succeed))
    const out = tidy(colour(process.stdout))
    const err = tidy(colour(process.stderr))
    return {
      ...base,
      log: (...args: ReadonlyArray<unknown>) => base.log(...args.map(out)),
      error: (...args: ReadonlyArray<unknown>) => base.error(...args.map(err))
    }
  })()
)
