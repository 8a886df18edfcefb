/**
 * Replays every test/transcripts/*.http against a fresh in-process server of the app its `# app:` names, once per
 * `# env:` run. The env variables go through the real settings loader, so any WO_* knob works in a transcript.
 */
import { ConfigProvider, Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { loadSettings, type Settings } from "../src/config.ts"
import { apps, startServer } from "./support/server.ts"
import { parseTranscript, replayTranscript, type Transcript } from "./support/transcript.ts"

const DIR = path.join(import.meta.dirname, "transcripts")

/**
 * The settings an env run means, leaving out what the test server owns (listen address, data dir, recording).
 * Unset variables take their defaults, not the developer's environment, so a run is the same everywhere.
 */
const settingsFor = async (env: Readonly<Record<string, string>>): Promise<Partial<Settings>> => {
  const settings = await Effect.runPromise(
    loadSettings({ dataDir: "(unused)" }).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
  )
  const { host: _host, port: _port, dataDir: _dataDir, recordFile: _recordFile, ...rest } = settings
  return rest
}

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
        const server = await startServer(appOf(transcript), await settingsFor(env))
        try {
          const result = await replayTranscript(transcript, server.url)
          if (!result.ok) expect.fail(`${file}${envLabel(env)}\n${result.failures.join("\n\n")}`)
        } finally {
          await server.close()
        }
      })
    }
  }
})
