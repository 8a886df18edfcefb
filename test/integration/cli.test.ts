/**
 * The command line as people use it, in real `wo` processes: a wrong command line gets one plain line and exit 2,
 * help piped into another program carries no terminal styles, `--version` prints the version. And the runtime
 * embedded in a plain Node program (testkit/embedded.mjs) behaves as `wo run` does: it logs, binds the
 * `listen` it was given, and stops on SIGTERM with the flush message and exit 0.
 */
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { builtPackage } from "../../testkit/app-dir.ts"
import { loadSettings } from "../../src/support/config.ts"
import { VERSION } from "../../src/support/version.ts"
import { spawnNode, spawnWo, WO_READY } from "../../testkit/spawn.ts"
import { freePort, http, ROOT, runWo, tempDir } from "../../testkit/server.ts"

const ESC = "\x1b"

describe("wo's command line", () => {
  it.concurrent.each([
    { args: ["run"], says: /Missing argument <app-dir>/ },
    { args: ["init"], says: /Missing argument <dir>/ },
    { args: ["tets"], says: /Invalid subcommand for wo - use one of 'run', 'dev', 'init'/ },
    { args: ["run", "examples/blog", "--port", "1"], says: /unknown argument: '--port'/ },
    { args: ["run", "examples/blog", "--listen", "1"], says: /^wo: --listen expects HOST:PORT, got "1"$/ },
    { args: ["run", "no/such/app"], says: /no\/such\/app/ },
    { args: ["init", "--template", "shop", "x"], says: /tasks.*library/ },
    { args: ["verify"], says: /^wo: name a data dir, or a PostgreSQL store with --store/ },
    { args: ["backup"], says: /^wo: usage: wo backup <data-dir> <dest>/ }
  ])("wo $args: one plain line on stderr, exit 2", async ({ args, says }) => {
    const ran = await runWo(args)
    expect(ran.code, ran.stderr).toBe(2)
    expect(ran.stdout).toBe("")
    const lines = ran.stderr.trimEnd().split("\n")
    expect(lines, ran.stderr).toHaveLength(1)
    expect(lines[0]).toMatch(says)
    expect(ran.stderr).not.toContain(ESC)
    expect(ran.stderr).not.toContain("_tag")
  })

  it("prints help without terminal styles when piped, and exits 0", async () => {
    for (const args of [["--help"], ["run", "--help"]]) {
      const ran = await runWo(args)
      expect(ran.code).toBe(0)
      expect(ran.stdout).toContain("USAGE")
      expect(ran.stdout).not.toContain(ESC)
    }
  })

  it("wo --help (and wo alone) lists the commands before the options every command takes", async () => {
    // (`-h` takes the same path as `--help`: src/cli/top-help.ts `wantsTopHelp`.)
    for (const args of [["--help"], []]) {
      const ran = await runWo(args)
      expect(ran.code, args.join(" ")).toBe(0)
      const at = (text: string) => ran.stdout.indexOf(text)
      expect(at("COMMANDS")).toBeGreaterThan(at("DESCRIPTION"))
      expect(at("OPTIONS")).toBeGreaterThan(at("COMMANDS"))
      for (const command of ["- run ", "- dev ", "- init ", "- test ", "- verify ", "- backup ", "- restore "]) {
        expect(at(command), command).toBeGreaterThan(at("COMMANDS"))
        expect(at(command), command).toBeLessThan(at("--completions"))
      }
    }
  })

  it("wo init from a checkout depends on the checkout by its absolute path, so the new app can move", async () => {
    const dir = path.join(tempDir("wo-init-"), "shop")
    const ran = await runWo(["init", dir])
    expect(ran.code, ran.stderr).toBe(0)
    const moved = path.join(tempDir("wo-init-moved-"), "shop")
    fs.renameSync(dir, moved)
    const spec = JSON.parse(fs.readFileSync(path.join(moved, "package.json"), "utf8")).dependencies.writeonce as string
    expect(spec).toBe(`file:${ROOT}`)
    expect(fs.existsSync(path.join(spec.slice("file:".length), "package.json"))).toBe(true)
    expect(fs.readFileSync(path.join(moved, "README.md"), "utf8")).toContain(`installs writeonce from \`${ROOT}\``)
  })

  it("wo --version prints the version alone", async () => {
    const ran = await runWo(["--version"])
    expect(ran.code).toBe(0)
    expect(ran.stdout).toBe(`${VERSION}\n`)
  })
})

describe("wo run in a checkout", () => {
  it("runs the app against the same build of writeonce the runtime was loaded from, never a second copy", async () => {
    // Under the checkout, so that the app's `effect` resolves; its `writeonce` goes through wo's app loader.
    fs.mkdirSync(path.join(ROOT, ".data"), { recursive: true })
    const appDir = fs.mkdtempSync(path.join(ROOT, ".data", "wo-one-copy-"))
    try {
      fs.writeFileSync(path.join(appDir, "app.ts"), [
        `import { Schema } from "effect"`,
        `import { defineApp, entity } from "writeonce"`,
        `console.log("writeonce is " + import.meta.resolve("writeonce"))`,
        `export default defineApp({ name: "one", entities: { notes: entity({ fields: { text: Schema.String } }) } })`
      ].join("\n"))
      const server = await spawnWo(["run", appDir, "--data", path.join(appDir, ".data"), "--listen", "127.0.0.1:0"])
      try {
        const created = await http(`${server.url}/api/notes`, { method: "POST", body: { text: "hi" } })
        expect(created.status).toBe(201)
        expect(server.stdout()).toMatch(/^writeonce is file:\/\/.*\/\.wo-build\/[0-9a-f]{16}\/index\.mjs$/m)
      } finally {
        await server.stop()
      }
    } finally {
      fs.rmSync(appDir, { recursive: true, force: true })
    }
  })
})

describe("wo run's compiled app (bin/compiled-app.mjs)", () => {
  // Under the checkout, so that the app's `effect` resolves.
  const appFolder = () => {
    fs.mkdirSync(path.join(ROOT, ".data"), { recursive: true })
    return fs.mkdtempSync(path.join(ROOT, ".data", "wo-compiled-"))
  }
  const write = (dir: string, file: string, lines: ReadonlyArray<string>) => {
    fs.writeFileSync(path.join(dir, file), lines.join("\n"))
    // A second edit within the mtime's resolution still changes it.
    const later = new Date(Date.now() + 1000 * Math.random())
    fs.utimesSync(path.join(dir, file), later, later)
  }
  const app = (name: string) => [
    `import { Schema } from "effect"`,
    `import { defineApp, entity } from "writeonce"`,
    `import { FIELD } from "./fields.ts"`,
    `console.log("field " + FIELD + " in " + import.meta.dirname)`,
    `export default defineApp({ name: "${name}", entities: { notes: entity({ fields: { [FIELD]: Schema.String } }) } })`
  ]
  const run = async (dir: string) => {
    const server = await spawnWo(["run", dir, "--data", path.join(dir, ".data"), "--listen", "127.0.0.1:0"])
    await server.stop()
    return server.stdout()
  }

  it("is built once, and again after an edit of any file the app imports", async () => {
    const dir = appFolder()
    try {
      write(dir, "fields.ts", [`export const FIELD = "text"`])
      write(dir, "app.ts", app("edits"))
      expect(await run(dir)).toContain(`field text in ${dir}`)
      const cache = path.join(dir, "node_modules/.cache/writeonce")
      const built = fs.readdirSync(cache).filter((f) => f.endsWith(".mjs"))
      expect(built).toHaveLength(1)
      const builtAt = fs.statSync(path.join(cache, built[0])).mtimeMs
      expect(await run(dir)).toContain(`field text in ${dir}`)
      expect(fs.statSync(path.join(cache, built[0])).mtimeMs).toBe(builtAt)
      write(dir, "fields.ts", [`export const FIELD = "body"`])
      expect(await run(dir)).toContain(`field body in ${dir}`)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("a broken app.ts fails as it always did: the loader's message with file:line, and exit 1", async () => {
    const dir = appFolder()
    try {
      write(dir, "fields.ts", [`export const FIELD = "text"`])
      write(dir, "app.ts", app("broken"))
      await run(dir)
      write(dir, "app.ts", [...app("broken").slice(0, 3), `const = 1`])
      const syntax = await runWo(["run", dir, "--data", path.join(dir, ".data"), "--listen", "127.0.0.1:0"])
      expect(syntax.code).toBe(1)
      expect(syntax.stderr).toMatch(new RegExp(`cannot load ${dir}/app\\.ts: [\\s\\S]*app\\.ts:4:6`))
      write(dir, "app.ts", [...app("broken").slice(0, 3), `throw new Error("no app today")`, `export default 1`])
      const thrown = await runWo(["run", dir, "--data", path.join(dir, ".data"), "--listen", "127.0.0.1:0"])
      expect(thrown.code).toBe(1)
      expect(thrown.stderr).toContain(`no app today (at ${dir}/app.ts:4:7)`)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("loadSettings", () => {
  const load = (input: Parameters<typeof loadSettings>[0]) => Effect.runPromise(Effect.either(loadSettings(input)))

  it("takes listen, and every setting, from the one object", async () => {
    const settings = await load({ dataDir: "/tmp/unused", listen: "127.0.0.1:8092", maxBatch: 7 })
    expect(Either.getOrThrow(settings)).toMatchObject({ host: "127.0.0.1", port: 8092, maxBatch: 7, dataDir: "/tmp/unused" })
  })

  it("refuses an unknown key, and a listen that is not HOST:PORT, naming them", async () => {
    const unknown = await load({ dataDir: "/tmp/unused", lisen: "127.0.0.1:8092" } as never)
    expect(Either.isLeft(unknown) && String(unknown.left)).toMatch(/unknown default "lisen"/)
    const malformed = await load({ dataDir: "/tmp/unused", listen: "8092" })
    expect(Either.isLeft(malformed) && String(malformed.left)).toMatch(/listen expects HOST:PORT, got "8092"/)
  })
})

describe("writeonce embedded in a plain Node program", () => {
  // Plain `node`, no loader and no writeonce-source condition: `writeonce` is this checkout's built package (dist/).
  const plainNode = { env: { NODE_OPTIONS: undefined }, ready: WO_READY }
  beforeAll(builtPackage)

  it("logs as wo run does, binds the listen it was given, and stops on SIGTERM with the flush and exit 0", async () => {
    const port = await freePort()
    const server = await spawnNode(path.join(ROOT, "testkit/embedded.mjs"), [tempDir("wo-embedded-"), `127.0.0.1:${port}`], plainNode)
    expect(server.url).toBe(`http://127.0.0.1:${port}`)
    const created = await http(`${server.url}/api/notes`, { method: "POST", body: { text: "hi" } })
    expect(created.status).toBe(201)
    expect(await server.stop("SIGTERM")).toBe(0)
    const lines = server.stdout().trimEnd().split("\n")
    expect(lines[0]).toMatch(/^\S+Z INFO {2}writeonce \S+ serving app "embedded" \(notes\) at http:\/\/127\.0\.0\.1:\d+$/)
    expect(lines.at(-1)).toMatch(/ INFO {2}shutting down: flushing the last batch and closing the store$/)
  })

  it("handles a SIGTERM sent the moment the ready line appears (the handler is in place before the line), 4 times", async () => {
    // On a loaded machine, a process that enlists its handler after the build is killed by Node's default action in
    // most rounds (exit by signal, no flush).
    const codes: Array<number | null> = []
    for (let round = 0; round < 4; round++) {
      const server = await spawnNode(path.join(ROOT, "testkit/embedded.mjs"), [tempDir("wo-embedded-"), `127.0.0.1:${await freePort()}`], plainNode)
      codes.push(await server.stop("SIGTERM"))
    }
    expect(codes).toEqual([0, 0, 0, 0])
  })
})
