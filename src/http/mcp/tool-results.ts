/**
 * What a tool answers: its result, a failure as a result with isError (never a protocol error), and, where a
 * row's JSON is already made, the whole result's JSON text beside it.
 */
import type { ParseResult } from "effect"
import type { Row } from "../../domain/catalog.ts"
import { issuesOf } from "../../domain/codecs.ts"
import { andMore, isStoreError, STORE_UNAVAILABLE, storeErrorPolicy, ValidationFailed, type CommandError, type NotFound, type StoreError } from "../../domain/errors.ts"
import { IDEMPOTENT_REPLAY_META } from "../../commands/idempotency.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import { refusalText } from "./refusal-text.ts"

/** A tools/call result (failures are results with isError, not protocol errors). */
export type CallToolResult = {
  readonly content: ReadonlyArray<{ readonly type: "text"; readonly text: string }>
  readonly structuredContent?: unknown
  readonly isError?: boolean
  readonly _meta?: Readonly<Record<string, unknown>>
}

/**
 * A tool's answer: the result, and, when the tool could make it without serialising the row again, the
 * result's JSON text (a row's JSON is made once and is both the text content and the structuredContent).
 */
export interface ToolResult {
  readonly result: CallToolResult
  readonly json?: string
}

export const success = (text: string, structuredContent: unknown): ToolResult => ({ result: { content: [{ type: "text", text }], structuredContent } })

/** A JSON body as the result: its text, parsed as the structuredContent, and the whole result's JSON made at once. */
export const jsonResult = (body: string): ToolResult => ({
  ...success(body, JSON.parse(body)),
  json: `{"content":[{"type":"text","text":${JSON.stringify(body)}}],"structuredContent":${body}}`
})

/**
 * The `_meta` key of a refused tool result: `{error: "Rejected", code, message}` for the domain's refusal, and
 * `{error: "StoreUnavailable", code, message, retryable, retryAfter}` for a store error.
 */
export const REFUSAL_META = "writeonce/refusal"

/**
 * A store error's refusal: its cause as `code` (the `code` label of `wo_refusals_total`) and whether a retry can
 * succeed, as REST's 503 and Retry-After say it, so that an agent need not parse the text to know it may retry.
 */
const storeRefusal = (error: StoreError) => {
  const { metric, retryAfter } = storeErrorPolicy(error)
  return retryAfter === undefined
    ? { error: STORE_UNAVAILABLE, code: metric, message: error.message, retryable: false }
    : { error: STORE_UNAVAILABLE, code: metric, message: error.message, retryable: true, retryAfter }
}

/** An error as the text of an isError result. */
export const errorResult = (message: string): ToolResult => ({ result: { content: [{ type: "text", text: message }], isError: true } })

/**
 * A refused call's result. Its text is what the model reads (refusal-text.ts: the message, the code, the next step
 * in `app`'s tool names); `_meta` carries the same refusal as data, for a client to branch on.
 */
export const failure = (error: CommandError | NotFound | ValidationFailed, app?: CompiledApp): ToolResult => {
  const text = refusalText(app, error)
  return {
    result: error._tag === "IdempotencyKeyReused"
      ? { content: [{ type: "text", text }], isError: true, _meta: { [REFUSAL_META]: { error: error._tag, key: error.key, message: error.message } } }
      : error._tag === "Rejected"
      // The domain's refusal carries its code, as REST's 422 body does, for an agent to branch on. In `_meta`, not
      // `structuredContent`: SDK v1's client checks structuredContent against the tool's outputSchema (the row)
      // even on an isError result, and would throw instead of returning the refusal.
      ? { content: [{ type: "text", text }], isError: true, _meta: { [REFUSAL_META]: { error: error._tag, code: error.code, message: error.message } } }
      : isStoreError(error)
      ? { content: [{ type: "text", text }], isError: true, _meta: { [REFUSAL_META]: storeRefusal(error) } }
      : errorResult(text).result
  }
}

/**
 * A write's answer given again for a retried idempotency key: the same result, flagged in `_meta`. Without the
 * prepared JSON text (which carries no `_meta`), so that each era adds its own `_meta` beside the flag.
 */
export const asReplay = (answer: ToolResult): ToolResult => ({ result: { ...answer.result, _meta: { ...answer.result._meta, [IDEMPOTENT_REPLAY_META]: true } } })

/** Hot path (bench: MCP get): the row is serialised once, or not at all when the store already did it. */
export const rowResult = (row: Row, rowJson: string = JSON.stringify(row)): ToolResult => ({
  result: { content: [{ type: "text", text: rowJson }], structuredContent: row },
  json: `{"content":[{"type":"text","text":${JSON.stringify(rowJson)}}],"structuredContent":${rowJson}}`
})

/**
 * A read row's result, made once per row object (a change makes a new row; none is changed in place, as REST's
 * row-answers.ts relies on too), so a row read again costs no JSON. Weak: an entry lives as long as its row is
 * held (the row cache bounds them). Hand-tuned, bench: MCP get.
 */
const readResults = new WeakMap<Row, ToolResult>()

export const readRowResult = (row: Row): ToolResult => {
  let result = readResults.get(row)
  if (result === undefined) {
    result = rowResult(row)
    readResults.set(row, result)
  }
  return result
}

/** Bounded as every ValidationFailed is (errors.ts): at most MAX_ISSUES issues, each clipped, the rest counted. */
export const argumentError = (type: string, error: ParseResult.ParseError): ToolResult => {
  const issues = new ValidationFailed({ type, issues: issuesOf(error) })
  const listed = issues.issues.map((i) => `${i.path.join(".") || "arguments"}: ${i.message}`).join("; ")
  return errorResult(`invalid ${type}: ${listed}${andMore(issues.omitted)}`)
}
