/**
 * `wo run` and `wo dev` started without @effect/cli: loading it (and the config-file parsers it brings) is a fifth
 * of `wo run`'s start. This reads only a plain, well-formed command line: the command, one app folder that exists,
 * and each option of the command at most once, as `--name value` or a bare flag. Anything else (--help, a typo,
 * a missing folder, `--name=value`) is left to the full command line (cli.ts), so help and usage errors read
 * exactly as they always did.
 */
import * as fs from "node:fs"
import { runCommand } from "./command-line.ts"
import { devApp, runApp, type RunOptions } from "./serve.ts"

/** Each command's options: a value (`--data DIR`) or a flag (`--insecure`), named as cli.ts declares them. */
const OPTIONS = {
  run: { data: "value", listen: "value", insecure: "flag", "accept-data-loss": "flag", record: "value", store: "value", access: "value" },
  dev: { data: "value", listen: "value", insecure: "flag", access: "value" }
} as const

/** `wo run ...` or `wo dev ...` read as RunOptions, or undefined when cli.ts must read it. */
export const readServeArgs = (args: ReadonlyArray<string>): { readonly command: "run" | "dev"; readonly options: RunOptions } | undefined => {
  const [command, ...rest] = args
  if (command !== "run" && command !== "dev") return undefined
  const declared: Readonly<Record<string, "value" | "flag">> = OPTIONS[command]
  const given = new Map<string, string | true>()
  const positional: Array<string> = []
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]
    if (!arg.startsWith("-")) {
      positional.push(arg)
      continue
    }
    const name = arg.slice(2)
    const kind = arg.startsWith("--") ? declared[name] : undefined
    if (kind === undefined || given.has(name)) return undefined
    if (kind === "flag") given.set(name, true)
    else {
      const value = rest[++i]
      if (value === undefined || value.startsWith("-")) return undefined
      given.set(name, value)
    }
  }
  if (positional.length !== 1 || !isDirectory(positional[0])) return undefined
  const text = (name: string) => (typeof given.get(name) === "string" ? (given.get(name) as string) : undefined)
  return {
    command,
    options: {
      appDir: positional[0],
      data: text("data"),
      listen: text("listen"),
      insecure: given.has("insecure"),
      acceptDataLoss: given.has("accept-data-loss"),
      record: text("record"),
      store: text("store"),
      access: text("access")
    }
  }
}

const isDirectory = (p: string) => {
  try {
    return fs.statSync(p).isDirectory()
  } catch {
    return false
  }
}

export type ServeArgs = NonNullable<ReturnType<typeof readServeArgs>>

/** Runs `wo run` or `wo dev` as read. */
export const serve = (read: ServeArgs) => runCommand(read.command === "run" ? runApp(read.options) : devApp(read.options))

/** Runs `wo run`/`wo dev` from `args` (process.argv after the script) and says true, or says false for cli.ts. */
export const serveFromArgs = (args: ReadonlyArray<string>): boolean => {
  const read = readServeArgs(args)
  if (read !== undefined) serve(read)
  return read !== undefined
}
