/**
 * Replaying a transcript: every exchange in order, stopping at the first failing one (later ones usually depend
 * on its captures).
 */
import { expectedEvents, indent, matchResponse, type ActualResponse } from "./compare.ts"
import type { Vars } from "./match.ts"
import type { Transcript, TranscriptRequest } from "./parse.ts"
import { prepareRequest, send, type ReadPlan } from "./send.ts"

export interface ReplayOptions {
  /** Values known before the first exchange, as if captured. */
  readonly vars?: Readonly<Record<string, unknown>>
  /** Longest wait for one response (and for a stream without `# read:` to end). Default 10 s. */
  readonly timeoutMs?: number
}

export interface ReplayResult {
  readonly ok: boolean
  /** One readable report per failing exchange (replay stops at the first). */
  readonly failures: ReadonlyArray<string>
  /** Everything captured. */
  readonly vars: Readonly<Record<string, unknown>>
}

/** Replays every exchange in order against `baseUrl` (e.g. `http://127.0.0.1:8080`). */
export const replayTranscript = async (transcript: Transcript, baseUrl: string, options: ReplayOptions = {}): Promise<ReplayResult> => {
  const vars: Vars = new Map(Object.entries(options.vars ?? {}))
  const url = new URL(baseUrl)
  const done = (failures: Array<string>): ReplayResult => ({ ok: failures.length === 0, failures, vars: Object.fromEntries(vars) })
  for (const [index, exchange] of transcript.exchanges.entries()) {
    const label = (request: TranscriptRequest) =>
      `exchange ${index + 1} "${exchange.title}" (line ${exchange.line}): ${request.method} ${request.target}`
    let request: TranscriptRequest
    try {
      request = prepareRequest(exchange.request, vars)
    } catch (e) {
      return done([`${label(exchange.request)}\n  ${(e as Error).message}`])
    }
    const plan: ReadPlan = { ...exchange.expect.read, countComments: expectedEvents(exchange.expect.body).some((e) => e.comment !== undefined) }
    let actual: ActualResponse
    try {
      actual = await send(url, request, plan, options.timeoutMs ?? 10_000)
    } catch (e) {
      return done([`${label(request)}\n  request failed: ${(e as Error).message}`])
    }
    const problems = matchResponse(exchange.expect, actual, vars)
    if (problems.length > 0) return done([`${label(request)}\n${indent(problems, "  ").join("\n")}`])
  }
  return done([])
}
