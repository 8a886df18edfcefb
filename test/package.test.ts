/**
 * The package as a new user gets it. `npm pack` once, install the tarball once into a temp project made by
 * `npm init -y` (so a CommonJS one), then, on that one install: `wo init`; `wo run` with a REST create and list;
 * `wo test` passing, then failing after a transcript edit; an app.ts in the CommonJS project itself; the runtime
 * embedded as a Layer from plain Node (an .mjs, no loader), logging and stopping on SIGTERM as `wo run` does; and
 * a consumer `tsc --noEmit` against the shipped types, strict and without skipLibCheck. The npm cache makes the
 * install take seconds.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import pkg from "../package.json" with { type: "json" }
import { spawnNode, WO_READY } from "../testkit/spawn.ts"
import { freePort, ROOT, tempDir } from "../testkit/server.ts"

interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * The environment for the user's commands: none of this test run's own settings. vitest.config.ts sets the
 * writeonce-source condition (which would point `writeonce` at sources the tarball does not ship), and `npm test`
 * sets npm_package_* and a local prefix that would make a nested npm act on this checkout.
 */
const userEnv = (() => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || k === "NODE_OPTIONS" || k === "INIT_CWD" || /^npm_(package|lifecycle)_/.test(k) || k === "npm_config_local_prefix") continue
    env[k] = v
  }
  return { ...env, npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" }
})()

const run = (command: string, args: ReadonlyArray<string>, cwd: string, timeoutMs = 120_000): Promise<Ran> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: userEnv, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()))
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()))
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
    child.once("error", reject)
    child.once("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })

const npm = (args: ReadonlyArray<string>, cwd: string) => run("npm", args, cwd)

/**
 * The consumer typecheck runs with the TypeScript the scaffold pins, and with TypeScript 7 when the checkout has it
 * (the `typescript7` devDependency alias, npm:typescript@7); without it, that half is skipped, and says so.
 */
const TYPESCRIPTS = [path.join(ROOT, "node_modules/typescript/bin/tsc")]
const TS7 = path.join(ROOT, "node_modules/typescript7/bin/tsc")
if (fs.existsSync(TS7)) TYPESCRIPTS.push(TS7)
else console.warn("package.test.ts: TypeScript 7 (node_modules/typescript7) is not installed: the consumer typecheck runs on TypeScript 5 only")

const must = (ran: Ran, what: string) => {
  if (ran.code !== 0) throw new Error(`${what} exited ${ran.code}:\n${ran.stdout}\n${ran.stderr}`)
  return ran
}

describe("the packed package", () => {
  const work = tempDir("wo-package-")
  const project = path.join(work, "project")
  let tarball: string
  let packed: { size: number; unpackedSize: number; files: Array<{ path: string }> }

  /** The installed `wo`, as `npx wo` runs it. */
  const wo = (args: ReadonlyArray<string>) => run(process.execPath, [path.join(project, "node_modules/.bin/wo"), ...args], project)

  beforeAll(async () => {
    const pack = must(await npm(["pack", "--json", "--pack-destination", work], ROOT), "npm pack")
    packed = JSON.parse(pack.stdout)[0]
    tarball = path.join(work, (packed as unknown as { filename: string }).filename)
    fs.mkdirSync(project)
    must(await npm(["init", "-y"], project), "npm init -y")
    must(
      // typescript and @types/node as the scaffold's devDependencies bring them: `wo test` typechecks with them.
      await npm([
        "install", "--prefer-offline", "--no-audit", "--no-fund", tarball, `effect@${pkg.dependencies.effect}`,
        `typescript@${pkg.devDependencies.typescript}`, `@types/node@${pkg.devDependencies["@types/node"]}`
      ], project),
      "npm install of the tarball"
    )
  }, 180_000)

  afterAll(() => fs.rmSync(work, { recursive: true, force: true }))

  it("ships the build, not the sources, tests or benchmarks", () => {
    const files = packed.files.map((f) => f.path)
    // For the record (the issue asks for it in the note).
    console.log(`tarball: ${packed.size} bytes packed, ${packed.unpackedSize} unpacked, ${files.length} files`)
    expect(files).toContain("dist/index.js")
    expect(files).toContain("dist/index.d.ts")
    expect(files).toContain("dist/testing/index.d.ts")
    expect(files).toContain("dist/wo.js")
    expect(files).toContain("dist/console/page/main.ts") // the console page is bundled from these at runtime
    expect(files).toContain("docs/operating.md") // the README links the manual's pages
    const unexpected = files.filter((f) => !/^(dist\/|docs\/[\w-]+\.md$|README\.md$|package\.json$|LICENSE)/.test(f))
    expect(unexpected).toEqual([])
    expect(JSON.parse(fs.readFileSync(path.join(project, "package.json"), "utf8")).type).toBe("commonjs")
  })

  it("ships a manifest without scripts (npm 11 warns about install-time ones), and leaves the checkout's in place", () => {
    const installed = JSON.parse(fs.readFileSync(path.join(project, "node_modules/writeonce/package.json"), "utf8"))
    expect(installed.scripts).toBeUndefined()
    expect(installed.bin).toEqual(pkg.bin)
    // postpack put the checkout's package.json back, `prepare` (the build on `npm ci`) included.
    expect(JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).scripts.prepare).toBe("node scripts/build.mjs")
    expect(fs.existsSync(path.join(ROOT, ".package.json.unpacked"))).toBe(false)
  })

  it("npx wo --help lists every command", async () => {
    const help = must(await run("npx", ["wo", "--help"], project), "npx wo --help")
    for (const command of ["run", "init", "test", "replay", "verify"]) expect(help.stdout).toMatch(new RegExp(`- ${command} .*\\S`))
  })

  it("wo init scaffolds an app, and refuses a folder that is not empty", async () => {
    const init = must(await wo(["init", "shop"]), "wo init shop")
    expect(init.stdout).toContain(`created app "shop"`)
    for (const file of ["package.json", "app.ts", "specs/tasks.spec.ts", "transcripts/tasks.http", "README.md"]) {
      expect(fs.existsSync(path.join(project, "shop", file)), file).toBe(true)
    }
    const manifest = JSON.parse(fs.readFileSync(path.join(project, "shop/package.json"), "utf8"))
    expect(manifest.type).toBe("module")
    expect(Object.keys(manifest.dependencies).sort()).toEqual(["effect", "writeonce"])
    expect(manifest.devDependencies).toEqual({ "@types/node": pkg.devDependencies["@types/node"], typescript: pkg.devDependencies.typescript })
    expect(manifest.scripts.typecheck).toBe("tsc --noEmit")
    // Installed from a tarball, the new app depends on that same tarball, so `npm install` works before a release; by
    // its absolute path, so that the app's folder can move, as its README says.
    expect(manifest.dependencies.writeonce).toBe(`file:${tarball}`)
    expect(fs.readFileSync(path.join(project, "shop/README.md"), "utf8")).toContain(`installs writeonce from \`${tarball}\``)

    const again = await wo(["init", "shop"])
    expect(again.code).toBe(1)
    expect(again.stderr).toMatch(/is not empty .*never overwrites/)
  })

  it("wo run serves the new app: a create and a list over REST", async () => {
    const child = spawn(process.execPath, [path.join(project, "node_modules/.bin/wo"), "run", "shop", "--listen", "127.0.0.1:0", "--data", path.join(work, "data")], {
      cwd: project,
      env: userEnv,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve))
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const onData = (c: Buffer) => {
          out += c.toString()
          const m = /serving app "shop" \(tasks\) at (http:\/\/\S+)/.exec(out)
          if (m) resolve(m[1])
        }
        child.stdout.on("data", onData)
        child.stderr.on("data", onData)
        child.once("exit", (code) => reject(new Error(`wo run exited ${code}:\n${out}`)))
      })
      const created = await fetch(`${url}/api/tasks`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ title: "Ship it" })
      })
      expect(created.status).toBe(201)
      expect(await created.json()).toEqual({ id: "1", version: 1, title: "Ship it", done: false })
      const list = await fetch(`${url}/api/tasks`)
      expect(await list.json()).toMatchObject({ items: [{ id: "1", title: "Ship it", done: false }] })
      const page = await fetch(`${url}/console/console.js`)
      expect(page.status, "the console page bundles from the installed package").toBe(200)
    } finally {
      child.kill("SIGTERM")
    }
    expect(await exited, out).toBe(0)
  })

  it("wo test passes, then fails with a diff after an edit breaks the transcript", async () => {
    const junit = path.join(work, "junit.xml")
    const pass = await wo(["test", "shop", "--junit", junit])
    expect(pass.code, `${pass.stdout}\n${pass.stderr}`).toBe(0)
    expect(pass.stdout).toMatch(/^TAP version 13$/m)
    expect(pass.stdout).toMatch(/^ok \d+ - specs\/tasks\.spec\.ts > an open task can be completed$/m)
    expect(pass.stdout).toMatch(/^ok \d+ - transcripts\/tasks\.http$/m)
    expect(pass.stdout).toMatch(/^# fail 0$/m)
    expect(fs.readFileSync(junit, "utf8")).toMatch(/<testsuites [^>]*failures="0"/)

    expect(pass.stdout).toMatch(/^ok 1 - typecheck$/m)

    // How a spec that does not compile fails, and --no-typecheck, are the checkout's to show
    // (test/integration/wo-test-typecheck.test.ts): the same code as this build's.

    const transcript = path.join(project, "shop/transcripts/tasks.http")
    fs.writeFileSync(transcript, fs.readFileSync(transcript, "utf8").replace(`"done": true`, `"done": false`))
    const fail = await wo(["test", "shop", "--junit", junit, "--no-typecheck"]) // the typecheck passed above
    expect(fail.code).toBe(1)
    expect(fail.stdout).toMatch(/^not ok \d+ - transcripts\/tasks\.http$/m)
    expect(fail.stdout).toContain(`$.done: expected false, got true`)
    expect(fail.stdout).toMatch(/^\s+- +"done": false$/m)
    expect(fail.stdout).toMatch(/^\s+\+ +"done": true$/m)
    expect(fs.readFileSync(junit, "utf8")).toMatch(/<failure message="exchange 2 &quot;complete it&quot;/)
  }, 300_000) // a hang guard for a loaded 2-core machine

  it("runs an app.ts that lives in the CommonJS project itself", async () => {
    fs.mkdirSync(path.join(project, "notes"))
    fs.writeFileSync(path.join(project, "notes/app.ts"), `import { Schema } from "effect"
import { defineApp, entity } from "writeonce"

export default defineApp({ name: "notes", entities: { notes: entity({ fields: { text: Schema.String } }) } })
`)
    fs.writeFileSync(path.join(project, "notes/notes.spec.ts"), `import { create, created, DeciderSpecification, spec } from "writeonce/testing"
import app from "./app.ts"

spec("a note is created", () =>
  DeciderSpecification.for(app, "notes")([]).when(create({ text: "hi" })).then(created({ text: "hi" })))
`)
    const ran = await wo(["test", "notes"])
    expect(ran.code, `${ran.stdout}\n${ran.stderr}`).toBe(0)
    // Typechecked first (no tsconfig.json there: strict defaults that accept an app.ts in a CommonJS project).
    expect(ran.stdout).toMatch(/^ok 1 - typecheck$/m)
    expect(ran.stdout).toMatch(/^ok 2 - notes\.spec\.ts > a note is created$/m)
  })

  it("folds a view declared again in a worker thread that loads the installed package's build", async () => {
    // The view's version comes from the environment: the server and its worker thread read the same one.
    fs.mkdirSync(path.join(project, "counted"))
    fs.writeFileSync(path.join(project, "counted/app.ts"), `import { Schema } from "effect"
import { defineApp, entity } from "writeonce"

export default defineApp({
  name: "counted",
  entities: { notes: entity({ fields: { text: Schema.String }, rest: ["create", "list"] }) },
  views: (view) => ({
    notes_count: view({
      schema: Schema.Struct({ n: Schema.Int }),
      initial: { n: 0 },
      version: Number(process.env.COUNTED_VERSION ?? 1),
      on: { notes: ["created"] },
      evolve: (c) => ({ n: c.n + 1 })
    })
  })
})
`)
    const data = path.join(work, "counted-data")
    const serve = (version: number) =>
      spawnNode(path.join(project, "node_modules/.bin/wo"), ["run", path.join(project, "counted"), "--listen", "127.0.0.1:0", "--data", data], {
        env: { NODE_OPTIONS: undefined, COUNTED_VERSION: String(version), WO_REFOLD_THREAD_FROM: "1", WO_REFOLD_PRIORITY: "normal" },
        ready: WO_READY
      })
    const first = await serve(1)
    try {
      for (let i = 0; i < 30; i++) {
        const res = await fetch(`${first.loopbackUrl}/api/notes`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ text: `n${i}` }) })
        expect(res.status).toBe(201)
      }
    } finally {
      await first.stop()
    }
    const second = await serve(2)
    try {
      for (let polls = 0; polls < 500 && !/views: notes_count folded again/.test(second.output()); polls++) await new Promise((r) => setTimeout(r, 20))
      const value = await (await fetch(`${second.loopbackUrl}/api/_views/notes_count`)).json()
      expect(second.output()).toMatch(/views: notes_count folded again from 30 events in a worker thread at normal priority in \d+ ms/)
      expect(value).toMatchObject({ value: { n: 30 } })
    } finally {
      await second.stop()
    }
  })

  it("embeds the runtime as a Layer from plain Node, no loader", async () => {
    fs.writeFileSync(path.join(project, "embed.mjs"), `import { Effect, ManagedRuntime, Schema } from "effect"
import { defineApp, entity, HttpServer, loadSettings, writeOnceLayer } from "writeonce"
import { DeciderSpecification } from "writeonce/testing"

const app = defineApp({ name: "embedded", entities: { notes: entity({ fields: { text: Schema.String } }) } })
DeciderSpecification.for(app, "notes")
const settings = await Effect.runPromise(loadSettings({ dataDir: process.argv[2] }, { host: "127.0.0.1", port: 0 }))
const runtime = ManagedRuntime.make(writeOnceLayer(app, settings))
const { url } = await runtime.runPromise(HttpServer)
const created = await fetch(url + "/api/notes", { method: "POST", headers: { "content-type": "application/json" }, body: '{"text":"hi"}' })
console.log(created.status, JSON.stringify(await (await fetch(url + "/api/notes")).json()))
await runtime.dispose()
`)
    const ran = await run(process.execPath, ["embed.mjs", path.join(work, "embedded-data")], project)
    expect(ran.code, ran.stderr).toBe(0)
    expect(ran.stdout).toContain(`201 {"items":[{"id":"1","version":1,"text":"hi"}]}`)
  })

  it("embedded in a plain Node program, logs as wo run does, binds its listen, and stops on SIGTERM with exit 0", async () => {
    fs.copyFileSync(path.join(ROOT, "testkit/embedded.mjs"), path.join(project, "embedded.mjs"))
    const port = await freePort()
    const server = await spawnNode(path.join(project, "embedded.mjs"), [path.join(work, "embedded-signal-data"), `127.0.0.1:${port}`], {
      env: { NODE_OPTIONS: undefined },
      ready: WO_READY
    })
    expect(server.url).toBe(`http://127.0.0.1:${port}`)
    expect(await server.stop("SIGTERM")).toBe(0)
    expect(server.stdout()).toMatch(/^\S+Z INFO {2}writeonce \S+ serving app "embedded"/)
    expect(server.stdout().trimEnd()).toMatch(/ INFO {2}shutting down: flushing the last batch and closing the store$/)
  })

  it("type-checks a consumer (and the scaffolded app) against the shipped types with tsc --noEmit", async () => {
    fs.writeFileSync(path.join(project, "consumer.ts"), `import { Effect, Layer, Schema } from "effect"
import { defineApp, entity, HttpServer, loadSettings, reject, writeOnceLayer, type AppDef } from "writeonce"
import { DeciderSpecification, invoke, invoked, created, spec } from "writeonce/testing"

export const app: AppDef = defineApp({
  name: "typed",
  entities: {
    products: entity({
      fields: { name: Schema.String, price: Schema.Number },
      methods: {
        set_price: { params: { price: Schema.Number }, apply: (row, { price }) => (price > row.price * 10 ? reject("too steep") : { price }) }
      }
    })
  }
})

spec("set_price", () =>
  DeciderSpecification.for(app, "products")([created({ name: "Pen", price: 2 })])
    .when(invoke("set_price", { price: 3 }))
    .then([invoked("set_price", { price: 3 })]))

export const url: Effect.Effect<string, unknown> = Effect.gen(function* () {
  const settings = yield* loadSettings({ dataDir: ".data" })
  const layer: Layer.Layer<HttpServer, unknown> = writeOnceLayer(app, settings)
  return (yield* Effect.provide(HttpServer, layer)).url
})
`)
    // Strict, every declaration file checked (no skipLibCheck), no lib newer than the target's, only @types/node.
    fs.writeFileSync(path.join(project, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        lib: ["ES2022"],
        types: ["node"],
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noEmit: true,
        allowImportingTsExtensions: true
      },
      include: ["consumer.ts", "shop/**/*.ts"]
    }))
    // And the types are real: a wrong use is an error. One program per compiler: the last one (the faster when there
    // are two) checks a project that adds a wrong use beside the consumer, and must report that one error and no
    // other, which proves the consumer and the app clean on it as well.
    fs.writeFileSync(path.join(project, "wrong.ts"), `import { defineApp } from "writeonce"\nexport const wrong: number = defineApp\n`)
    fs.writeFileSync(path.join(project, "tsconfig.wrong.json"), JSON.stringify({ extends: "./tsconfig.json", include: ["consumer.ts", "shop/**/*.ts", "wrong.ts"] }))
    for (const [i, tsc] of TYPESCRIPTS.entries()) {
      if (i < TYPESCRIPTS.length - 1) {
        const ok = await run(process.execPath, [tsc, "--noEmit", "-p", project], project)
        expect(ok.code, `${tsc}:\n${ok.stdout}`).toBe(0)
        continue
      }
      const bad = await run(process.execPath, [tsc, "--noEmit", "-p", path.join(project, "tsconfig.wrong.json")], project)
      expect(bad.code, `${tsc}:\n${bad.stdout}`).not.toBe(0)
      const errors = bad.stdout.split("\n").filter((line) => /error TS\d+/.test(line))
      expect(errors, `${tsc}:\n${bad.stdout}`).toHaveLength(1)
      expect(errors[0]).toMatch(/^wrong\.ts\(2,\d+\): error TS2322/)
    }
  }, 300_000) // every declaration file checked: ~10 s of CPU for TypeScript 5, minutes on a loaded machine
})
