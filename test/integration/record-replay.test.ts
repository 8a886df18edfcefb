/**
 * A transcript recorded against a data dir that already holds rows replays green on the fresh
 * server `wo test` starts: the ids of rows created while recording (referenced by other rows, command params, a
 * view keyed by them, tool results), the view's seq and ETag, the command's correlation are placeholders, and
 * the server warns that it records over existing rows. The real runtime and the library sample, over REST and
 * both MCP eras.
 */
import { Layer, Logger } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import library from "../../examples/library/app.ts"
import { callTool, rpc } from "../../testkit/legacy-client.ts"
import { modernCall, modernRequest } from "../../testkit/modern-client.ts"
import { http, startServer, tempDir } from "../../testkit/server.ts"
import { parseTranscript } from "../../src/testing/transcript/index.ts"
import { runTranscript } from "../../src/testing/transcript-run.ts"

const post = (url: string, body: unknown) => http(url, { method: "POST", body })

describe("a transcript recorded against a data dir with rows", () => {
  it("replays green on a fresh server, and the recording warns about the rows", async () => {
    const dataDir = tempDir("wo-record-dev-")
    // A developer's data dir: two books and four members (so new rows get other ids than on a fresh store), history.
    const dev = await startServer(library, { dataDir })
    try {
      for (const title of ["Emma", "Ulysses"]) expect((await post(`${dev.url}/api/books`, { title, author: "A" })).status).toBe(201)
      for (const name of ["Bo", "Cy", "Di", "Ed"]) expect((await post(`${dev.url}/api/members`, { name })).status).toBe(201)
      expect((await post(`${dev.url}/api/books/1/add_copies`, { n: 2 })).status).toBe(200)
    } finally {
      await dev.close()
    }

    const file = path.join(tempDir("wo-record-"), "session.http")
    const logs: Array<string> = []
    const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ logLevel, message }) => {
      logs.push(`${logLevel.label} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
    }))
    const recording = await startServer(library, { dataDir, recordFile: file }, capture as Layer.Layer<never>)
    let recorded: { book: string; member: string; loan: string; seq: number }
    try {
      const url = recording.url
      const book = (await post(`${url}/api/books`, { title: "Dune", author: "Frank Herbert" })).json.id
      await post(`${url}/api/books/${book}/add_copies`, { n: 2 })
      const member = (await post(`${url}/api/members`, { name: "Ann" })).json.id
      const lend = (await post(`${url}/api/_commands/lend`, { book, member })).json
      const loan = lend.changes.find((c: { type: string }) => c.type === "loans").id
      const view = await http(`${url}/api/_views/loans_by_member/${member}`)
      expect(view.json.value).toEqual({ out: 1, loans: [loan] })
      await http(`${url}/api/_views/loans_by_member`)
      await http(`${url}/api/loans/${loan}`)
      // An agent: a create tool (2026-07-28), the command as a tool on a legacy session, the view as tool and resource.
      const created = await modernCall(url, "members_create", { name: "Bea" })
      const bea = created.json.result.structuredContent.id
      expect((await callTool(url, "lend", { book, member: bea })).isError).toBeUndefined()
      await modernCall(url, "view_loans_by_member", { key: member })
      await rpc(url, "resources/read", { uri: `wo://views/loans_by_member/${bea}` })
      await modernRequest(url, "resources/read", { uri: `wo://members/${bea}` }, `wo://members/${bea}`)
      recorded = { book, member, loan, seq: view.json.seq }
    } finally {
      await recording.close()
    }
    // What differs from a fresh store: the ids and the seq are not what a replay gets.
    expect(recorded).toMatchObject({ book: "3", member: "5" })
    expect(recorded.seq).toBeGreaterThan(6)
    expect(logs.some((l) => /^WARN recording on a data dir .* that already holds 6 rows: a transcript replays on an empty store/.test(l))).toBe(true)

    const text = fs.readFileSync(file, "utf8")
    expect(text).toContain("POST /api/books/{{books_3}}/add_copies")
    expect(text).toContain('"book": "{{books_3}}"')
    expect(text).toContain('"member": "{{members_5}}"')
    expect(text).toContain("GET /api/_views/loans_by_member/{{members_5}}")
    expect(text).toContain('"key": "{{members_5}}"')
    expect(text).toContain("wo://views/loans_by_member/{{members_6}}")
    expect(text).toContain('etag: "{{seq}}"')
    expect(text).toContain('"seq": "{{seq}}"')
    expect(text).toContain('"correlation": "{{correlation}}"')
    expect(text).toContain("wo://members/{{members_6}}")

    const result = await runTranscript(library, parseTranscript(text))
    expect(result.failures).toEqual([])
    expect(result.ok).toBe(true)
    // On the fresh store the same rows got other ids, and the view another seq.
    expect(result.vars).toMatchObject({ books_3: "1", members_5: "1", members_6: "2" })
    expect(result.vars.seq).not.toBe(recorded.seq)
  })
})
