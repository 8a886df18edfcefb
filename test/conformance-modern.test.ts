import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { compareWithExpectations, loadExpectations } from "./conformance/expectations.ts"
import { formatResults, runConformance } from "./conformance/run-conformance.ts"
import { apps, startServer } from "../testkit/server.ts"

describe("MCP conformance 0.2.0-alpha.12 against a live blog server", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  beforeAll(async () => {
    server = await startServer(apps.blog)
  })
  afterAll(async () => {
    await server.close()
  })

  it("--suite all --spec-version 2026-07-28: the generic scenarios pass; the others fail only as expected", async () => {
    const results = await runConformance({ pkg: "modern", url: `${server.url}/mcp`, suite: "all", specVersion: "2026-07-28", timeoutMs: 240_000 })
    console.log(formatResults(results))
    for (const s of ["tools-list", "resources-list", "sep-2164-resource-not-found", "http-header-validation", "dns-rebinding-protection", "server-sse-multiple-streams"]) {
      expect(results.find((r) => r.scenario === s)?.passed, s).toBe(true)
    }
    expect(results.length).toBeGreaterThanOrEqual(40)
    expect(compareWithExpectations(results, loadExpectations("modern"))).toEqual([])
  })

  it("server-session-lifecycle at 2025-11-25 (the legacy era's session rules)", async () => {
    const [result] = await runConformance({ pkg: "modern", url: `${server.url}/mcp`, scenarios: ["server-session-lifecycle"], specVersion: "2025-11-25", timeoutMs: 60_000 })
    expect(result.failedChecks).toEqual([])
    expect(result.passed).toBe(true)
    expect(result.counts.success).toBeGreaterThanOrEqual(3)
  })
})
