/** The console's catalog view lists the app's commands across types beside the types, with params, route and tool. */
import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { catalogView } from "../../src/console/catalog-view.ts"
import { defineApp, entity } from "../../src/domain/catalog.ts"
import { compileApp } from "../../src/domain/compile.ts"
import library from "../../examples/library/app.ts"
import pricing from "../../examples/pricing/app.ts"
import { rpc } from "../../testkit/legacy-client.ts"
import { http, startServer } from "../../testkit/server.ts"

const viewOf = (app: Parameters<typeof compileApp>[0]) => catalogView(Either.getOrThrow(compileApp(app)), "0.0.0", () => [])

describe("the console's catalog view", () => {
  it("lists each command with its params, its REST route and its MCP tool", () => {
    expect(viewOf(library).commands).toEqual([
      {
        name: "lend",
        description: "Lend a book to a member: one copy leaves the shelf and a loan opens, in one atomic write.",
        params: [
          { name: "book", required: true, summary: "string" },
          { name: "member", required: true, summary: "string" }
        ],
        rest: "POST /api/_commands/lend",
        tool: "lend"
      },
      {
        name: "return",
        description: "Take a lent book back: the loan is closed and the copy is back on the shelf, in one atomic write.",
        params: [{ name: "loan", required: true, summary: "string" }],
        rest: "POST /api/_commands/return",
        tool: "return"
      }
    ])
  })

  it("leaves out the route or the tool a command is not served on, and says when there are none", () => {
    const app = defineApp({
      name: "t",
      entities: { notes: entity({ fields: { text: Schema.String } }) },
      commands: {
        internal: { params: {}, rest: false, decide: () => [] },
        rest_only: { params: { n: Schema.optional(Schema.Int) }, mcp: false, decide: () => [] }
      }
    })
    expect(viewOf(app).commands).toEqual([
      { name: "internal", params: [] },
      { name: "rest_only", params: [{ name: "n", required: false, summary: "integer" }], rest: "POST /api/_commands/rest_only" }
    ])
    expect(viewOf(pricing).commands).toEqual([])
  })

  it("served at /api/_catalog, names exactly the command tools tools/list answers", async () => {
    const server = await startServer(library)
    try {
      const catalog = (await http(`${server.url}/api/_catalog`)).json
      const tools: Array<string> = (await rpc(server.url, "tools/list")).json.result.tools.map((t: { name: string }) => t.name)
      expect(catalog.commands.map((c: { tool?: string }) => c.tool)).toEqual(["lend", "return"])
      for (const tool of ["lend", "return"]) expect(tools).toContain(tool)
      // The types' own tools are still listed per type: loans are read-only on MCP.
      const loans = catalog.types.find((t: { name: string }) => t.name === "loans")
      expect(loans.operations.filter((o: { tool?: string }) => o.tool).map((o: { tool: string }) => o.tool)).toEqual(["loans_list", "loans_get"])
      expect(tools.filter((t) => t.startsWith("loans_"))).toEqual(["loans_list", "loans_get"])
    } finally {
      await server.close()
    }
  })
})
