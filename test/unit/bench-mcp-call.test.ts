/**
 * The bench's tools/call requests (bench/lib/wo.ts `mcpCall`, its fixed parts made once per session and tool) are
 * the testkit's, byte for byte: the same path, headers and body as `modernToolCall` / `legacyToolCall` build.
 */
import { describe, expect, it } from "vitest"
import { mcpCall, mcpCallBuilt } from "../../bench/lib/wo.ts"
import type { LegacySession } from "../../testkit/mcp.ts"

const session: LegacySession = { origin: "http://127.0.0.1:1", path: "/mcp", sessionId: "0123456789abcdef", protocolVersion: "2025-11-25" }
const stateless: LegacySession = { origin: "http://127.0.0.1:1", path: "/other", protocolVersion: "2025-11-25" }

const cases: ReadonlyArray<[number, string, Record<string, unknown>]> = [
  [1, "products_get", { id: "1" }],
  [123456789, "products_get", { id: "64" }],
  [7, "products_set_price", { id: "3", price: 12.5 }],
  [8, "products_set_price", { id: "quote\" and \\ and é", price: 1 }],
  [9, "naïve tool", {}],
  [10, "products_get", { nested: { a: [1, "two", null] } }]
]

describe("bench mcpCall", () => {
  for (const who of ["modern", session, stateless] as const) {
    it(`sends what the testkit builds (${who === "modern" ? "modern" : `legacy ${who.path}`})`, () => {
      for (const [id, name, args] of cases) {
        // Twice: the first call makes the shape, the second reuses it.
        for (let round = 0; round < 2; round++) {
          const fast = mcpCall(who, id + round, name, args)
          const built = mcpCallBuilt(who, id + round, name, args)
          expect({ ...fast, headers: { ...fast.headers } }).toEqual({ ...built, headers: { ...built.headers } })
          expect(fast.body).toBe(built.body)
        }
      }
    })
  }
})
