/**
 * `wo --help` (and `wo -h`, and `wo` alone): the commands first, then the options every command takes. @effect/cli
 * prints its own options (--completions, --wizard, ...) before the commands, so a newcomer reads five generic
 * options before learning what `wo` does; this is its help as @effect/cli makes it, with the sections reordered.
 */
import { CliConfig, Command, HelpDoc } from "@effect/cli"
import { Console } from "effect"

const blocksOf = (doc: HelpDoc.HelpDoc): Array<HelpDoc.HelpDoc> => (HelpDoc.isSequence(doc) ? [...blocksOf(doc.left), ...blocksOf(doc.right)] : [doc])

const headerText = (doc: HelpDoc.HelpDoc) => (HelpDoc.isHeader(doc) && doc.value._tag === "Text" ? doc.value.value : undefined)

/** The help's sections in the order a reader needs them: what it is, its commands, then the rest. */
export const reorderedHelp = (doc: HelpDoc.HelpDoc): HelpDoc.HelpDoc => {
  const sections: Array<{ readonly name: string | undefined; readonly blocks: Array<HelpDoc.HelpDoc> }> = []
  for (const block of blocksOf(doc)) {
    const name = headerText(block)
    if (name !== undefined || sections.length === 0) sections.push({ name, blocks: [block] })
    else sections[sections.length - 1].blocks.push(block)
  }
  const rank = (name: string | undefined) => (name === "DESCRIPTION" ? 0 : name === "COMMANDS" ? 1 : 2)
  return HelpDoc.blocks([...sections].sort((a, b) => rank(a.name) - rank(b.name)).flatMap((s) => s.blocks))
}

/** Whether the command line asks for the top-level help. */
export const wantsTopHelp = (args: ReadonlyArray<string>) => args.length === 0 || (args.length === 1 && (args[0] === "--help" || args[0] === "-h"))

export const printTopHelp = <A extends string, R, E, B>(command: Command.Command<A, R, E, B>, version: string) =>
  Console.log(
    `writeonce ${version}\n\nUSAGE\n\n$ wo <command> [options]   (wo <command> --help: that command's options)\n\n` +
      HelpDoc.toAnsiText(reorderedHelp(Command.getHelp(command, CliConfig.defaultConfig)))
  )
