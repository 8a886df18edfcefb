/**
 * The era predicate (protocol.ts) and the modern era's mirror-header rules (headers.ts): which envelopes and
 * headers mean modern or legacy, and which header values agree with the body.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { checkMirrorHeaders, decodeHeaderValue, expectedMcpName } from "../../src/http/mcp/headers.ts"
import { eraOf as eraOfMeta, LEGACY_VERSIONS, META, metaOf, MODERN_VERSIONS } from "../../src/http/mcp/protocol.ts"

const MODERN = MODERN_VERSIONS[0]
const b64 = (s: string) => `=?base64?${Buffer.from(s, "utf8").toString("base64")}?=`
const headers = (h: Record<string, string>) => ({ mcpMethod: h["mcp-method"], mcpName: h["mcp-name"] })
/** The predicate over params and the protocol-version header, as the transport feeds it (first value of a repeated header). */
const eraOf = (params: Record<string, unknown> | undefined, h: Record<string, string | ReadonlyArray<string>>) => {
  const v = h["mcp-protocol-version"]
  return eraOfMeta(metaOf(params), Array.isArray(v) ? v[0] : (v as string | undefined))
}

describe("the era predicate", () => {
  it.effect("a protocol version in params._meta means modern, whatever the headers say", () =>
    Effect.sync(() => {
      expect(eraOf({ _meta: { [META.protocolVersion]: MODERN } }, {})).toBe("modern")
      // The key decides, not its value: a modern envelope with a bad version is refused by the modern era.
      expect(eraOf({ _meta: { [META.protocolVersion]: "1999-01-01" } }, { "mcp-protocol-version": LEGACY_VERSIONS[0] })).toBe("modern")
    }))

  it.effect("an MCP-Protocol-Version header naming a modern revision means modern", () =>
    Effect.sync(() => {
      expect(eraOf(undefined, { "mcp-protocol-version": MODERN })).toBe("modern")
      expect(eraOf({}, { "mcp-protocol-version": [MODERN, "2025-11-25"] as unknown as string })).toBe("modern")
    }))

  it.effect("everything else is legacy", () =>
    Effect.sync(() => {
      expect(eraOf(undefined, {})).toBe("legacy")
      expect(eraOf({ name: "x" }, {})).toBe("legacy")
      for (const v of LEGACY_VERSIONS) expect(eraOf({}, { "mcp-protocol-version": v })).toBe("legacy")
      expect(eraOf({}, { "mcp-protocol-version": "2099-01-01" })).toBe("legacy")
      // _meta without a protocol version (a progress token, say) is not a modern envelope.
      expect(eraOf({ _meta: { progressToken: 1 } }, {})).toBe("legacy")
      // A _meta that is not an object carries nothing.
      expect(eraOf({ _meta: [META.protocolVersion] }, {})).toBe("legacy")
      expect(eraOf({ _meta: null }, {})).toBe("legacy")
      // The method name plays no part.
      expect(eraOf({ _meta: {} }, {})).toBe("legacy")
    }))

  it("metaOf reads only what is there", () => {
    expect(metaOf({ _meta: { a: 1 } })).toEqual({ a: 1 })
    expect(metaOf({ _meta: "x" })).toBeUndefined()
    expect(metaOf(undefined)).toBeUndefined()
  })
})

describe("mirror headers", () => {
  it.effect("the base64 sentinel is decoded; a malformed one is refused", () =>
    Effect.sync(() => {
      expect(decodeHeaderValue("plain")).toEqual(Either.right("plain"))
      expect(decodeHeaderValue(b64("prix ✓"))).toEqual(Either.right("prix ✓"))
      expect(Either.isLeft(decodeHeaderValue("=?base64?not*base64?="))).toBe(true)
      expect(Either.isLeft(decodeHeaderValue("=?base64?abc?="))).toBe(true)
    }))

  it.effect("Mcp-Name is required for tools/call and prompts/get (name) and resources/read (uri) only", () =>
    Effect.sync(() => {
      expect(expectedMcpName("tools/call", { name: "products_get" })).toBe("products_get")
      expect(expectedMcpName("prompts/get", { name: "p" })).toBe("p")
      expect(expectedMcpName("resources/read", { uri: "wo://products/1" })).toBe("wo://products/1")
      expect(expectedMcpName("tools/list", { name: "x" })).toBeUndefined()
      expect(expectedMcpName("tools/call", { name: 3 })).toBeUndefined()
    }))

  it.effect("Mcp-Method must be present and equal the body's method", () =>
    Effect.sync(() => {
      expect(checkMirrorHeaders(headers({ "mcp-method": "tools/list" }), "tools/list", {})).toEqual(Either.right(undefined))
      expect(checkMirrorHeaders(headers({}), "tools/list", {})).toEqual(Either.left("the Mcp-Method header is required"))
      const wrong = checkMirrorHeaders(headers({ "mcp-method": "tools/call" }), "tools/list", {})
      expect(Either.isLeft(wrong) && wrong.left).toMatch(/'tools\/call' does not match body value 'tools\/list'/)
      // Values are compared exactly.
      expect(Either.isLeft(checkMirrorHeaders(headers({ "mcp-method": "Tools/List" }), "tools/list", {}))).toBe(true)
    }))

  it.effect("Mcp-Name must be present and equal the body's name or uri, plain or base64", () =>
    Effect.sync(() => {
      const call = { name: "products_get", arguments: {} }
      const ok = (h: Record<string, string>, method = "tools/call", params: Record<string, unknown> = call) =>
        checkMirrorHeaders(headers({ "mcp-method": method, ...h }), method, params)
      expect(ok({ "mcp-name": "products_get" })).toEqual(Either.right(undefined))
      expect(ok({ "mcp-name": b64("products_get") })).toEqual(Either.right(undefined))
      expect(ok({})).toEqual(Either.left("the Mcp-Name header is required for this method"))
      expect(Either.isLeft(ok({ "mcp-name": "products_list" }))).toBe(true)
      expect(Either.isLeft(ok({ "mcp-name": b64("products_list") }))).toBe(true)
      expect(Either.isLeft(ok({ "mcp-name": "=?base64?***?=" }))).toBe(true)
      expect(ok({ "mcp-name": "wo://products/1" }, "resources/read", { uri: "wo://products/1" })).toEqual(Either.right(undefined))
      expect(Either.isLeft(ok({ "mcp-name": "wo://products/2" }, "resources/read", { uri: "wo://products/1" }))).toBe(true)
    }))
})
