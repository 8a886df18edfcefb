/** Protocol versions, error codes and metadata keys of the MCP revisions this server speaks. */

/** Session-based revisions, oldest first. */
export const LEGACY_VERSIONS = ["2025-03-26", "2025-06-18", "2025-11-25"] as const
/** Stateless revisions (per-request `_meta`). */
export const MODERN_VERSIONS = ["2026-07-28"] as const
export const LATEST_LEGACY = "2025-11-25"
/** Assumed when a legacy request carries no MCP-Protocol-Version header (spec: backwards compatibility). */
export const DEFAULT_LEGACY_HEADER_VERSION = "2025-03-26"

export const isLegacyVersion = (v: unknown): v is string => (LEGACY_VERSIONS as ReadonlyArray<unknown>).includes(v)
export const isModernVersion = (v: unknown): v is string => (MODERN_VERSIONS as ReadonlyArray<unknown>).includes(v)

export const META = {
  protocolVersion: "io.modelcontextprotocol/protocolVersion",
  clientCapabilities: "io.modelcontextprotocol/clientCapabilities",
  clientInfo: "io.modelcontextprotocol/clientInfo",
  serverInfo: "io.modelcontextprotocol/serverInfo",
  subscriptionId: "io.modelcontextprotocol/subscriptionId"
} as const

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** Legacy era: resource not found. */
  ResourceNotFound: -32002,
  /** Modern era: an Mcp-* header is missing or disagrees with the body. */
  HeaderMismatch: -32020,
  MissingRequiredClientCapability: -32021,
  UnsupportedProtocolVersion: -32022
} as const
