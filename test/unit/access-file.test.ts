/** The access file's decoding: tokens in clear or as SHA-256, grants checked against the catalog, every problem named. */
import { Either } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import library from "../../examples/library/app.ts"
import { decodeAccessFile, tokenDigest } from "../../src/access/access-file.ts"
import { compileApp } from "../../src/domain/compile.ts"

const app = Either.getOrThrow(compileApp(library))
const problemsOf = (text: string) => Either.match(decodeAccessFile(text, app), { onLeft: (p) => p, onRight: () => [] })

describe("decodeAccessFile", () => {
  it("reads the library sample's access.example.json: three principals, the auditor's token as its digest", () => {
    const text = fs.readFileSync(path.join(import.meta.dirname, "../../examples/library/access.example.json"), "utf8")
    const declared = Either.getOrThrow(decodeAccessFile(text, app))
    expect(declared.map((d) => d.principal.name)).toEqual(["librarian", "lending-desk", "auditor"])
    expect(declared[0].digest).toBe(tokenDigest("librarian-example-token-change-me"))
    expect(declared[2].digest).toBe(tokenDigest("auditor-example-token-change-me"))
    expect(declared[1].principal.grants?.commands.has("lend")).toBe(true)
    expect(declared[2].principal.grants?.readAll).toBe(true)
    expect(declared[2].principal.keyScope).toBe("auditor")
  })

  it("refuses grants the catalog does not declare, naming the principal and the grant", () => {
    const problems = problemsOf(JSON.stringify({ principals: [{ name: "desk", token: "a-token-long-enough", grants: ["command:lend", "books:burn", "view:nope"] }] }))
    expect(problems).toHaveLength(2)
    expect(problems[0]).toMatch(/principal desk: grant "books:burn"/)
    expect(problems[1]).toMatch(/principal desk: grant "view:nope"/)
  })

  it("refuses a principal with both or neither token, twice the same name or token, a short token, a bad digest", () => {
    const problems = problemsOf(JSON.stringify({
      principals: [
        { name: "a", token: "a-token-long-enough", tokenSha256: tokenDigest("x"), grants: [] },
        { name: "b", grants: [] },
        { name: "c", token: "same-token-for-two", grants: [] },
        { name: "c", token: "same-token-for-two", grants: [] }
      ]
    }))
    expect(problems.join("\n")).toMatch(/principal a needs exactly one of token and tokenSha256/)
    expect(problems.join("\n")).toMatch(/principal b needs exactly one/)
    expect(problems.join("\n")).toMatch(/principal c is declared twice/)
    expect(problems.join("\n")).toMatch(/principal c has the same token as another/)
    expect(problemsOf(JSON.stringify({ principals: [{ name: "d", token: "short", grants: [] }] })).join("\n")).toMatch(/at least 16 characters/)
    expect(problemsOf(JSON.stringify({ principals: [{ name: "e", tokenSha256: "abc", grants: [] }] })).join("\n")).toMatch(/64 hex digits/)
  })

  it("reads a principal's limits, and refuses limits that are not above 0", () => {
    const [p] = Either.getOrThrow(decodeAccessFile(JSON.stringify({ principals: [{ name: "a", token: "a-token-long-enough", grants: [], limits: { writesPerSecond: 50, streams: 20 } }] }), app))
    expect(p.principal.limits?.writes?.rate).toBe(50)
    expect(p.principal.limits?.streams).toBe(20)
    expect(problemsOf(JSON.stringify({ principals: [{ name: "a", token: "a-token-long-enough", grants: [], limits: { writesPerSecond: 0 } }] })).join("\n")).toMatch(/writesPerSecond is a number above 0/)
    expect(problemsOf(JSON.stringify({ principals: [{ name: "a", token: "a-token-long-enough", grants: [], limits: { streams: 1.5 } }] })).length).toBeGreaterThan(0)
  })

  it("refuses what is not the file's shape: bad JSON, unknown keys, a name with a space", () => {
    expect(problemsOf("{ not json").length).toBeGreaterThan(0)
    expect(problemsOf(JSON.stringify({ principals: [], extra: 1 })).join("\n")).toMatch(/extra/)
    expect(problemsOf(JSON.stringify({ principals: [{ name: "two words", token: "a-token-long-enough", grants: [] }] })).join("\n")).toMatch(/principal's name/)
  })
})
