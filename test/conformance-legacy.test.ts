import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { compareWithExpectations, loadExpectations } from "./conformance/expectations.ts"
import { formatResults, LEGACY_GENERIC_SCENARIOS, runConformance } from "./conformance/run-conformance.ts"
import { apps, startServer } from "../testkit/server.ts"

describe("MCP conformance 0.1.16 (legacy era) against a live blog server", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  beforeAll(async () => {
    server = await startServer(apps.blog)
  })
  afterAll(async () => {
    await server.close()
  })

  it("passes every generic scenario; the others fail only as expected", async () => {
    const results = await runConformance({ pkg: "legacy", url: `${server.url}/mcp`, suite: "all", timeoutMs: 120_000 })
    console.log(formatResults(results))
    const names = results.map((r) => r.scenario)
    for (const s of ["server-initialize", "ping", "tools-list", "resources-list", "dns-rebinding-protection"]) {
      expect(names).toContain(s)
      expect(results.find((r) => r.scenario === s)?.passed, s).toBe(true)
    }
    expect(LEGACY_GENERIC_SCENARIOS.every((s) => names.includes(s))).toBe(true)
    expect(compareWithExpectations(results, loadExpectations("legacy"))).toEqual([])
  })
})
