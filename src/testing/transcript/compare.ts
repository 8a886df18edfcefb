/**
 * Comparing one response with an exchange's expectation: status, the headers listed, and the body (JSON
 * structurally, a text/event-stream as a list of events), capturing placeholders in file order.
 */
import { parseSse, sseFrame, type SseEvent } from "../../support/sse.ts"
import { lineDiff } from "../line-diff.ts"
import type { ExpectedResponse } from "./parse.ts"
import { matchJson, matchText, resolveJson, resolveText, show, tryJson, type Vars } from "./match.ts"

export interface ActualResponse {
  readonly status: number
  /** Lower-cased names. */
  readonly headers: Readonly<Record<string, string>>
  readonly text: string
  /** Set for a text/event-stream response: the complete events read. */
  readonly events?: ReadonlyArray<SseEvent>
  /** Why reading stopped early, when that is itself a failure. */
  readonly problem?: string
}

const pretty = (value: unknown) => (JSON.stringify(value, null, 2) ?? "undefined").split("\n")

export const indent = (lines: ReadonlyArray<string>, by = "    ") => lines.map((l) => by + l)

/** The expected SSE events of a body. */
export const expectedEvents = (body: string) => parseSse(`${body}\n\n`)

const prettyData = (event: SseEvent): SseEvent => {
  const json = event.data === undefined ? { ok: false as const } : tryJson(event.data)
  return json.ok ? { ...event, data: JSON.stringify(json.value, null, 2) } : event
}

const EVENT_FIELDS = ["comment", "id", "event", "retry", "data"] as const

const matchEvents = (expected: ReadonlyArray<SseEvent>, received: ReadonlyArray<SseEvent>, vars: Vars): Array<string> => {
  const withComments = expected.some((e) => e.comment !== undefined)
  const actual = withComments ? received : received.filter((e) => e.comment === undefined)
  const problems: Array<string> = []
  const projected: Array<Record<string, string>> = []
  if (expected.length !== actual.length) problems.push(`expected ${expected.length} event(s), got ${actual.length}`)
  expected.forEach((exp, k) => {
    const act = actual[k]
    const shown: Record<string, string> = {}
    projected.push(shown)
    for (const field of EVENT_FIELDS) {
      const e = exp[field]
      const a = act?.[field]
      if (e === undefined && a === undefined) continue
      const where = `event ${k + 1} ${field}`
      if (act === undefined) {
        if (e !== undefined) shown[field] = resolveText(e, vars)
        continue
      }
      if (e === undefined) {
        problems.push(`${where}: not expected, got ${show(a)}`)
        continue
      }
      if (a === undefined) {
        problems.push(`${where}: missing (expected ${show(resolveText(e, vars))})`)
        shown[field] = resolveText(e, vars)
        continue
      }
      const json = field === "data" ? tryJson(e) : { ok: false as const }
      if (json.ok) {
        const parsed = tryJson(a)
        if (!parsed.ok) {
          problems.push(`${where}: expected JSON, got ${show(a)}`)
          shown[field] = JSON.stringify(resolveJson(json.value, vars))
          continue
        }
        const result = matchJson(json.value, parsed.value, vars, `${where} $`)
        problems.push(...result.problems)
        shown[field] = JSON.stringify(result.projected)
      } else if (matchText(e, a, vars)) shown[field] = a
      else {
        problems.push(`${where}: expected ${show(resolveText(e, vars))}, got ${show(a)}`)
        shown[field] = resolveText(e, vars)
      }
    }
  })
  if (problems.length === 0) return []
  // As the recorder writes them: JSON data pretty-printed over several `data:` lines.
  const render = (events: ReadonlyArray<SseEvent>) => events.flatMap((e) => sseFrame(prettyData(e)).split("\n").slice(0, -1))
  return [...problems, "events diff (- expected, + actual):", ...indent(lineDiff(render(projected), render(actual)))]
}

const matchBody = (expected: string, actual: ActualResponse, vars: Vars): Array<string> => {
  if (actual.events !== undefined) return matchEvents(expectedEvents(expected), actual.events, vars)
  const text = actual.text.trimEnd()
  if (expected === "") return text === "" ? [] : [`expected an empty body, got ${show(text)}`]
  const json = tryJson(expected)
  if (json.ok) {
    const parsed = tryJson(text)
    if (!parsed.ok) return [`expected a JSON body, got ${show(text)}`]
    const result = matchJson(json.value, parsed.value, vars)
    if (result.problems.length === 0) return []
    return [...result.problems, "body diff (- expected, + actual):", ...indent(lineDiff(pretty(result.projected), pretty(parsed.value)))]
  }
  if (matchText(expected.trimEnd(), text, vars)) return []
  return ["body differs (- expected, + actual):", ...indent(lineDiff(resolveText(expected, vars).split("\n"), text.split("\n")))]
}

/**
 * Compares a response with an exchange's expectation, capturing placeholders into `vars` in file order (status,
 * headers as listed, body). Returns the problems, empty when it matched.
 */
export const matchResponse = (expected: ExpectedResponse, actual: ActualResponse, vars: Vars): Array<string> => {
  const problems: Array<string> = []
  if (actual.problem !== undefined) problems.push(actual.problem)
  if (actual.status !== expected.status) problems.push(`status: expected ${expected.status}, got ${actual.status}`)
  for (const [name, pattern] of expected.headers) {
    const value = actual.headers[name.toLowerCase()]
    if (value === undefined) problems.push(`header ${name}: expected ${show(resolveText(pattern, vars))}, the response has none`)
    else if (!matchText(pattern, value, vars)) problems.push(`header ${name}: expected ${show(resolveText(pattern, vars))}, got ${show(value)}`)
  }
  problems.push(...matchBody(expected.body, actual, vars))
  return problems
}
