/**
 * Replays every test/transcripts/*.http against a fresh in-process server of the example app its `# app:` names,
 * once per `# env:` run, through the same runner as `wo test` (src/testing/transcript-run.ts). The env variables
 * go through the real settings loader, so any WO_* knob works in a transcript.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { apps } from "../testkit/server.ts"
import { parseTranscript, type Transcript } from "../src/testing/transcript/index.ts"
import { runTranscript } from "../src/testing/transcript-run.ts"

const DIR = path.join(import.meta.dirname, "transcripts")

const appOf = (transcript: Transcript) => {
  const app = transcript.app === undefined ? undefined : apps[transcript.app as keyof typeof apps]
  if (app === undefined) throw new Error(`"# app: ${transcript.app ?? ""}" is not one of: ${Object.keys(apps).join(", ")}`)
  return app
}

const envLabel = (env: Readonly<Record<string, string>>) =>
  Object.keys(env).length === 0 ? "" : ` [${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(" ")}]`

describe("transcripts", () => {
  const files = fs.readdirSync(DIR).filter((f) => f.endsWith(".http")).sort()

  it("finds the transcripts", () => expect(files.length).toBeGreaterThan(0))

  for (const file of files) {
    let transcript: Transcript
    try {
      transcript = parseTranscript(fs.readFileSync(path.join(DIR, file), "utf8"))
    } catch (e) {
      it(file, () => {
        throw new Error(`${file}: ${(e as Error).message}`)
      })
      continue
    }
    for (const env of transcript.envs) {
      it(`${file}${envLabel(env)}`, async () => {
        const result = await runTranscript(appOf(transcript), transcript, env)
        if (!result.ok) expect.fail(`${file}${envLabel(env)}\n${result.failures.join("\n\n")}`)
      })
    }
  }
})
