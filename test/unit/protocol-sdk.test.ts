/**
 * Our protocol constants (src/http/mcp/protocol.ts) pinned to what the official SDK packages export: the v1
 * SDK (`@modelcontextprotocol/sdk`, the legacy era's oracle) and the v2 server package
 * (`@modelcontextprotocol/server`, which speaks 2026-07-28). Method names come from the SDKs' own message
 * schemas; the modern revisions and the header-mismatch code, which v2 does not export, from its
 * `classifyInboundRequest`. An SDK upgrade that moves one of these fails here, not in an interop test.
 */
import { describe, expect, it } from "@effect/vitest"
import * as v1 from "@modelcontextprotocol/sdk/types.js"
import * as v2 from "@modelcontextprotocol/server"
import {
  DEFAULT_LEGACY_HEADER_VERSION,
  ErrorCode,
  LATEST_LEGACY,
  LEGACY_VERSIONS,
  META,
  Method,
  MODERN_VERSIONS,
  Notification
} from "../../src/http/mcp/protocol.ts"

/** The method literal of a zod message schema (v1 exports them by name; v2 in `specTypeSchemas`). */
const methodOf = (schema: unknown): unknown => (schema as { shape: { method: { value: unknown } } }).shape.method.value
const v2Method = (name: string) => methodOf((v2.specTypeSchemas as Record<string, unknown>)[name])

/** A modern-envelope tools/list as the v2 classifier sees it. */
const inbound = (version: string, mcpMethodHeader = "tools/list") => ({
  httpMethod: "POST",
  protocolVersionHeader: version,
  mcpMethodHeader,
  body: { jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: { [META.protocolVersion]: version, [META.clientCapabilities]: {} } } }
})

describe("protocol constants against the official SDKs", () => {
  it("legacy revisions: v1's latest, its supported list and the version assumed without a header", () => {
    expect(LATEST_LEGACY).toBe(v1.LATEST_PROTOCOL_VERSION)
    expect(LATEST_LEGACY).toBe(v2.LATEST_PROTOCOL_VERSION)
    for (const v of LEGACY_VERSIONS) {
      expect(v1.SUPPORTED_PROTOCOL_VERSIONS).toContain(v)
      expect(v2.SUPPORTED_PROTOCOL_VERSIONS).toContain(v)
    }
    expect(DEFAULT_LEGACY_HEADER_VERSION).toBe(v1.DEFAULT_NEGOTIATED_PROTOCOL_VERSION)
    expect(DEFAULT_LEGACY_HEADER_VERSION).toBe(v2.DEFAULT_NEGOTIATED_PROTOCOL_VERSION)
  })

  it("modern revisions are modern to the v2 classifier, legacy ones are not", () => {
    for (const v of MODERN_VERSIONS) {
      expect(v2.classifyInboundRequest(inbound(v))).toMatchObject({ kind: "modern", classification: { era: "modern", revision: v } })
    }
    for (const v of LEGACY_VERSIONS) {
      expect(v2.classifyInboundRequest(inbound(v))).toMatchObject({ classification: { era: "legacy" } })
    }
  })

  it("_meta keys are v2's", () => {
    expect(META).toEqual({
      protocolVersion: v2.PROTOCOL_VERSION_META_KEY,
      clientCapabilities: v2.CLIENT_CAPABILITIES_META_KEY,
      clientInfo: v2.CLIENT_INFO_META_KEY,
      serverInfo: v2.SERVER_INFO_META_KEY,
      subscriptionId: v2.SUBSCRIPTION_ID_META_KEY
    })
  })

  it("error codes: JSON-RPC's in both SDKs, MCP's in v2, HeaderMismatch as v2's classifier answers it", () => {
    for (const name of ["ParseError", "InvalidRequest", "MethodNotFound", "InvalidParams", "InternalError"] as const) {
      expect(ErrorCode[name]).toBe(v1.ErrorCode[name])
      expect(ErrorCode[name]).toBe(v2.ProtocolErrorCode[name])
    }
    expect(ErrorCode.ResourceNotFound).toBe(v2.ProtocolErrorCode.ResourceNotFound)
    expect(ErrorCode.MissingRequiredClientCapability).toBe(v2.ProtocolErrorCode.MissingRequiredClientCapability)
    expect(ErrorCode.UnsupportedProtocolVersion).toBe(v2.ProtocolErrorCode.UnsupportedProtocolVersion)
    expect(v2.classifyInboundRequest(inbound(MODERN_VERSIONS[0], "tools/call"))).toMatchObject({ kind: "reject", code: ErrorCode.HeaderMismatch, httpStatus: 400 })
  })

  it("method and notification names are the SDKs' message schemas' literals", () => {
    const legacy: Record<string, unknown> = {
      initialize: v1.InitializeRequestSchema,
      ping: v1.PingRequestSchema,
      toolsList: v1.ListToolsRequestSchema,
      toolsCall: v1.CallToolRequestSchema,
      resourcesList: v1.ListResourcesRequestSchema,
      resourceTemplatesList: v1.ListResourceTemplatesRequestSchema,
      resourcesRead: v1.ReadResourceRequestSchema,
      resourcesSubscribe: v1.SubscribeRequestSchema,
      resourcesUnsubscribe: v1.UnsubscribeRequestSchema
    }
    for (const [key, schema] of Object.entries(legacy)) expect(Method[key as keyof typeof Method]).toBe(methodOf(schema))
    const modern: Record<keyof typeof Method, string> = {
      initialize: "InitializeRequest",
      ping: "PingRequest",
      discover: "DiscoverRequest",
      listen: "SubscriptionsListenRequest",
      toolsList: "ListToolsRequest",
      toolsCall: "CallToolRequest",
      resourcesList: "ListResourcesRequest",
      resourceTemplatesList: "ListResourceTemplatesRequest",
      resourcesRead: "ReadResourceRequest",
      resourcesSubscribe: "SubscribeRequest",
      resourcesUnsubscribe: "UnsubscribeRequest"
    }
    for (const [key, name] of Object.entries(modern)) expect(Method[key as keyof typeof Method]).toBe(v2Method(name))
    expect(Notification).toEqual({
      progress: methodOf(v1.ProgressNotificationSchema),
      resourceUpdated: methodOf(v1.ResourceUpdatedNotificationSchema),
      resourceListChanged: methodOf(v1.ResourceListChangedNotificationSchema),
      toolListChanged: methodOf(v1.ToolListChangedNotificationSchema),
      subscriptionsAcknowledged: v2Method("SubscriptionsAcknowledgedNotification")
    })
  })
})
