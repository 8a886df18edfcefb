/**
 * What an agent reads in the library sample's tool and template descriptions: each list's sort example is one of
 * its own type's fields (never another type's), and the texts that name a type read as English whatever its name.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import library from "../../examples/library/app.ts"
import { rpc } from "../../testkit/legacy-client.ts"
import { startServer } from "../../testkit/server.ts"

let server: Awaited<ReturnType<typeof startServer>>
beforeAll(async () => {
  server = await startServer(library)
})
afterAll(() => server?.close())

describe("tool and template texts", () => {
  it("give each list's sort example from its own fields", async () => {
    const tools: Array<any> = (await rpc(server.url, "tools/list")).json.result.tools
    const description = (name: string) => tools.find((t) => t.name === name)!.description as string
    expect(description("members_list")).toContain(`sort with order ("name", "-name"; default id)`)
    expect(description("books_list")).toContain(`sort with order ("title", "-title"; default id)`)
    expect(description("loans_list")).toContain(`sort with order ("book", "-book"; default id)`)
    for (const name of ["members_list", "loans_list"]) expect(description(name)).not.toContain("title")
    const templates: Array<any> = (await rpc(server.url, "resources/templates/list")).json.result.resourceTemplates
    const template = (name: string) => templates.find((t) => t.name === name)!.description as string
    expect(template("members_list")).toContain(`sort with order ("name", "-name"; default id)`)
    expect(template("members_list")).not.toContain("title")
  })

  it("say 'a row of <type>', not 'a <type> row'", async () => {
    const tools: Array<any> = (await rpc(server.url, "tools/list")).json.result.tools
    const loansGet = tools.find((t) => t.name === "loans_get")!
    expect(loansGet.outputSchema.properties.book.description).toBe("the id of a row of books")
    expect(loansGet.outputSchema.properties.member.description).toBe("the id of a row of members")
    const texts = JSON.stringify([tools, (await rpc(server.url, "resources/templates/list")).json.result])
    expect(texts).not.toMatch(/\ban? (books|members|loans) row\b/)
  })
})
