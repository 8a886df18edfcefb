/**
 * The library sample as an app author runs it: `wo test examples/library` (typecheck, the
 * decider specs of its types and commands, its transcript) and a new app made by `wo init --template library`,
 * under another name, passing its own tests. Real `wo` processes.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import library from "../../examples/library/app.ts"
import { installLikeAnApp } from "../../testkit/app-dir.ts"
import { http, ROOT, runWo, startServer, tempDir } from "../../testkit/server.ts"

const okLines = (tap: string) => tap.split("\n").filter((l) => l.startsWith("ok "))

describe("the library sample", () => {
  // The sample's types are checked with the checkout's (test/typecheck.test.ts: tsconfig.json includes examples/).
  it("wo test examples/library: every spec and the transcript pass", { timeout: 180_000 }, async () => {
    const ran = await runWo(["test", path.join(ROOT, "examples/library"), "--no-typecheck"])
    expect(ran.code, ran.stdout).toBe(0)
    const passed = okLines(ran.stdout)
    expect(passed.some((l) => l.endsWith("specs/commands.spec.ts > lending takes a copy off the shelf and opens a loan, in one command"))).toBe(true)
    expect(passed.some((l) => l.endsWith("specs/books.spec.ts > a copy the library does not own cannot come back: the invariant refuses it"))).toBe(true)
    expect(passed.some((l) => l.endsWith("specs/books.spec.ts > available changes only through the methods"))).toBe(true)
    expect(passed.some((l) => l.endsWith("specs/books.spec.ts > no book has more than a million copies: an absurd number is refused before the sum overflows"))).toBe(true)
    expect(passed.some((l) => l.endsWith("transcripts/library.http"))).toBe(true)
    expect(ran.stdout).toMatch(/^# fail 0$/m)
  })

  it("an app made by wo init --template library passes its own tests under its own name", { timeout: 180_000 }, async () => {
    const dir = path.join(tempDir("wo-library-"), "branch-library")
    expect((await runWo(["init", "--template", "library", dir])).code).toBe(0)
    // Installed as an app would have it: writeonce (this checkout, its built types), effect and the Node types.
    installLikeAnApp(dir)
    // Its types are the sample's, which the checkout's typecheck checks; `wo test`'s own typecheck of an installed
    // app is the package test's and test/integration/wo-test-typecheck.test.ts's.
    const ran = await runWo(["test", dir, "--no-typecheck"])
    expect(ran.code, ran.stdout).toBe(0)
    // The transcript names the app it was made for: "# app: branch-library", as app.ts does.
    expect(ran.stdout).toMatch(/^ok \d+ - transcripts\/library\.http$/m)
    expect(ran.stdout).toMatch(/^# fail 0$/m)
  })

  it("refuses add_copies with an absurd n as a rule of the domain (422 with a code, not a 500), and writes nothing", async () => {
    const server = await startServer(library)
    try {
      const post = (path: string, body: unknown) => http(`${server.url}${path}`, { method: "POST", body })
      const { id } = (await post("/api/books", { title: "Dune", author: "Frank Herbert" })).json
      expect((await post(`/api/books/${id}/add_copies`, { n: 1 })).status).toBe(200)
      const absurd = await post(`/api/books/${id}/add_copies`, { n: Number.MAX_SAFE_INTEGER })
      expect(absurd.status).toBe(422)
      expect(absurd.json).toMatchObject({ error: "Rejected", code: "too_many_copies" })
      // The sum past the bound is refused too, however it is reached.
      const past = await post(`/api/books/${id}/add_copies`, { n: 1_000_000 })
      expect(past.status).toBe(422)
      expect(past.json.code).toBe("too_many_copies")
      const row = await http(`${server.url}/api/books/${id}`)
      expect(row.json).toMatchObject({ version: 2, copies: 1, available: 1 })
      // Up to the bound is allowed.
      expect((await post(`/api/books/${id}/add_copies`, { n: 999_999 })).json).toMatchObject({ copies: 1_000_000, available: 1_000_000 })
    } finally {
      await server.close()
    }
  })
})
