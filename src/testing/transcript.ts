/**
 * Transcripts: recorded HTTP exchanges in a readable, diffable text file (`*.http`), replayed against a live
 * server. The file format, placeholders and matching rules are described in docs/transcripts.md; `wo test`
 * (app-tests.ts) and this project's own test/transcripts.test.ts both replay through `runTranscript`.
 *
 * Replay stops at the first failing exchange (later ones usually depend on its captures).
 */
import * as http from "node:http"
import { formatSseEvent, splitSseEvents, type SseEvent } from "../http/recorder.ts"
import { lineDiff } from "./line-diff.ts"

export { lineDiff }

export interface TranscriptRequest {
  readonly method: string
  readonly target: string
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body: string
}

export interface ReadLimit {
  readonly events?: number
  readonly ms?: number
}

export interface ExpectedResponse {
  readonly status: number
  readonly read?: ReadLimit
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body: string
}

export interface Exchange {
  readonly title: string
  /** 1-based line of the `###` line, for messages. */
  readonly line: number
  readonly request: TranscriptRequest
  readonly expect: ExpectedResponse
}

export interface Transcript {
  readonly meta: Readonly<Record<string, string>>
  readonly app: string | undefined
  /** One entry per run; `[{}]` when there is no `# env:`. */
  readonly envs: ReadonlyArray<Readonly<Record<string, string>>>
  readonly exchanges: ReadonlyArray<Exchange>
}

// ---------------------------------------------------------------------------------------------------------------
// Parsing.

export class TranscriptSyntaxError extends Error {
  constructor(readonly line: number, message: string) {
    super(`line ${line}: ${message}`)
  }
}

const HEADER_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*)$/
const REQUEST_LINE = /^([A-Z]+)\s+(\S+)(?:\s+HTTP\/\d(?:\.\d)?)?$/
const STATUS_LINE = /^-->\s*(\d{3})\b/
const READ_LINE = /^#\s*read:\s*(.+)$/
const META_LINE = /^#\s*([\w-]+)\s*:\s*(.*)$/

const isExchangeStart = (line: string) => line.startsWith("###")

const trimBlankLines = (lines: ReadonlyArray<string>) => {
  let start = 0
  let end = lines.length
  while (start < end && lines[start].trim() === "") start++
  while (end > start && lines[end - 1].trim() === "") end--
  return lines.slice(start, end).join("\n")
}

const parseEnvs = (value: string | undefined): Transcript["envs"] => {
  if (value === undefined || value.trim() === "") return [{}]
  return value.split("|").map((run) =>
    Object.fromEntries(run.trim().split(/\s+/).filter((p) => p !== "").map((pair) => {
      const eq = pair.indexOf("=")
      if (eq <= 0) throw new TranscriptSyntaxError(1, `# env: expected NAME=value, got "${pair}"`)
      return [pair.slice(0, eq), pair.slice(eq + 1)]
    })))
}

const parseReadLimit = (text: string, line: number): ReadLimit => {
  let limit: { events?: number; ms?: number } = {}
  for (const part of text.split(",").map((p) => p.trim())) {
    const m = /^(\d+)\s*(events?|ms)$/.exec(part)
    if (!m) throw new TranscriptSyntaxError(line, `# read: expected "N events" or "N ms", got "${part}"`)
    limit = m[2] === "ms" ? { ...limit, ms: Number(m[1]) } : { ...limit, events: Number(m[1]) }
  }
  return limit
}

/** Parses a transcript; a malformed file throws a TranscriptSyntaxError naming the line. */
export const parseTranscript = (text: string): Transcript => {
  const lines = text.replace(/\r\n/g, "\n").split("\n")
  let i = 0
  const meta: Record<string, string> = {}
  for (; i < lines.length && !isExchangeStart(lines[i]); i++) {
    const line = lines[i].trim()
    if (line === "") continue
    if (!line.startsWith("#")) throw new TranscriptSyntaxError(i + 1, "before the first ### exchange only # lines are allowed")
    const m = META_LINE.exec(line)
    if (m) meta[m[1].toLowerCase()] = m[2].trim()
  }

  const exchanges: Array<Exchange> = []
  while (i < lines.length) {
    const start = i
    const title = lines[i++].slice(3).trim()
    while (i < lines.length && lines[i].trim() === "") i++
    const requestLine = REQUEST_LINE.exec(lines[i]?.trim() ?? "")
    if (!requestLine) throw new TranscriptSyntaxError(i + 1, `expected a request line such as "GET /api/articles", got "${lines[i] ?? ""}"`)
    i++

    const requestHeaders: Array<readonly [string, string]> = []
    for (; i < lines.length && lines[i].trim() !== "" && !STATUS_LINE.test(lines[i]); i++) {
      const h = HEADER_LINE.exec(lines[i])
      if (!h) throw new TranscriptSyntaxError(i + 1, `expected a request header "name: value" (a body needs a blank line before it), got "${lines[i]}"`)
      requestHeaders.push([h[1], h[2].trim()])
    }
    const bodyStart = i
    for (; i < lines.length && !STATUS_LINE.test(lines[i]); i++) {
      if (isExchangeStart(lines[i])) break
    }
    if (i >= lines.length || !STATUS_LINE.test(lines[i])) {
      throw new TranscriptSyntaxError(start + 1, `exchange "${title}" has no "--> <status>" line`)
    }
    const requestBody = trimBlankLines(lines.slice(bodyStart, i))
    const status = Number(STATUS_LINE.exec(lines[i])![1])
    i++

    let read: ReadLimit | undefined
    for (; i < lines.length && lines[i].startsWith("#") && !isExchangeStart(lines[i]); i++) {
      const r = READ_LINE.exec(lines[i].trim())
      if (!r) throw new TranscriptSyntaxError(i + 1, `unknown directive "${lines[i]}" (only "# read: ..." may follow the status)`)
      read = { ...read, ...parseReadLimit(r[1], i + 1) }
    }

    const expectedHeaders: Array<readonly [string, string]> = []
    for (; i < lines.length && lines[i].trim() !== "" && !isExchangeStart(lines[i]); i++) {
      const h = HEADER_LINE.exec(lines[i])
      if (!h) throw new TranscriptSyntaxError(i + 1, `expected a response header "name: value" (a body needs a blank line before it), got "${lines[i]}"`)
      expectedHeaders.push([h[1], h[2].trim()])
    }
    const expectedBodyStart = i
    while (i < lines.length && !isExchangeStart(lines[i])) i++

    exchanges.push({
      title,
      line: start + 1,
      request: { method: requestLine[1], target: requestLine[2], headers: requestHeaders, body: requestBody },
      expect: { status, read, headers: expectedHeaders, body: trimBlankLines(lines.slice(expectedBodyStart, i)) }
    })
  }
  return { meta, app: meta.app, envs: parseEnvs(meta.env), exchanges }
}

// ---------------------------------------------------------------------------------------------------------------
// Placeholders and matching.

/** Captured values by placeholder name. */
export type Vars = Map<string, unknown>

const PLACEHOLDER = /\{\{(\*|[A-Za-z_][\w.-]*)\}\}/g
const WHOLE_PLACEHOLDER = /^\{\{(\*|[A-Za-z_][\w.-]*)\}\}$/
const OPEN = "..."

const textOf = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value))
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
const hasPlaceholder = (s: string) => s.search(PLACEHOLDER) !== -1

/** `pattern` with every captured placeholder replaced by its value; unknown ones stay as written. */
const resolveText = (pattern: string, vars: Vars) =>
  pattern.replace(PLACEHOLDER, (whole, name: string) => (vars.has(name) ? textOf(vars.get(name)) : whole))

/**
 * Matches `actual` against a text pattern with placeholders; on success new captures are added to `vars`
 * (nothing is captured on failure).
 */
export const matchText = (pattern: string, actual: string, vars: Vars): boolean => {
  const captures: Array<string> = []
  let source = "^"
  let last = 0
  for (const m of pattern.matchAll(PLACEHOLDER)) {
    source += escapeRegExp(pattern.slice(last, m.index))
    last = m.index + m[0].length
    const name = m[1]
    if (name === "*") source += "[\\s\\S]*?"
    else if (vars.has(name)) source += escapeRegExp(textOf(vars.get(name)))
    else if (captures.includes(name)) source += `\\${captures.indexOf(name) + 1}`
    else {
      captures.push(name)
      source += "([\\s\\S]+?)"
    }
  }
  const match = new RegExp(`${source}${escapeRegExp(pattern.slice(last))}$`).exec(actual)
  if (!match) return false
  captures.forEach((name, k) => vars.set(name, match[k + 1]))
  return true
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v)

const deepEqual = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, k) => deepEqual(x, b[k]))
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a)
    return keys.length === Object.keys(b).length && keys.every((k) => k in b && deepEqual(a[k], b[k]))
  }
  return false
}

/**
 * A captured value against a later occurrence: deep equality, except that a value captured from text (a header,
 * part of a string) equals a number or boolean written the same (an ETag's `"{{seq}}"`, then `"seq": "{{seq}}"`).
 */
const sameCapture = (captured: unknown, actual: unknown) =>
  deepEqual(captured, actual) ||
  (typeof captured === "string" && (typeof actual === "number" || typeof actual === "boolean") && captured === String(actual))

/** An expected JSON value with captured placeholders filled in, for messages and diffs. */
const resolveJson = (expected: unknown, vars: Vars): unknown => {
  if (typeof expected === "string") {
    const whole = WHOLE_PLACEHOLDER.exec(expected)
    if (whole && vars.has(whole[1])) return vars.get(whole[1])
    return resolveText(expected, vars)
  }
  if (Array.isArray(expected)) return expected.map((e) => resolveJson(e, vars))
  if (isPlainObject(expected)) return Object.fromEntries(Object.entries(expected).map(([k, v]) => [k, resolveJson(v, vars)]))
  return expected
}

const show = (value: unknown) => (value === undefined ? "nothing" : JSON.stringify(value))

export interface JsonMatch {
  /** One line per difference, each naming a JSON path. */
  readonly problems: ReadonlyArray<string>
  /** The actual value where it matched and the expectation where it did not: diffing it against the actual value shows only real differences. */
  readonly projected: unknown
}

/** Structural comparison with placeholders (rules in docs/transcripts.md). Captures go into `vars`. */
export const matchJson = (expected: unknown, actual: unknown, vars: Vars, root = "$"): JsonMatch => {
  const problems: Array<string> = []
  const walk = (exp: unknown, act: unknown, path: string): unknown => {
    if (typeof exp === "string") {
      const whole = WHOLE_PLACEHOLDER.exec(exp)
      if (whole) {
        const name = whole[1]
        if (name === "*") return act
        if (!vars.has(name)) {
          vars.set(name, act)
          return act
        }
        if (sameCapture(vars.get(name), act)) return act
        problems.push(`${path}: expected {{${name}}} = ${show(vars.get(name))}, got ${show(act)}`)
        return vars.get(name)
      }
      if (hasPlaceholder(exp)) {
        if (typeof act === "string" && matchText(exp, act, vars)) return act
        problems.push(`${path}: expected a string like ${show(resolveText(exp, vars))}, got ${show(act)}`)
        return resolveText(exp, vars)
      }
    }
    if (Array.isArray(exp)) {
      if (!Array.isArray(act)) {
        problems.push(`${path}: expected an array, got ${show(act)}`)
        return resolveJson(exp, vars)
      }
      const open = exp.length > 0 && exp[exp.length - 1] === OPEN
      const items = open ? exp.slice(0, -1) : exp
      if (open ? act.length < items.length : act.length !== items.length) {
        problems.push(`${path}: expected ${open ? "at least " : ""}${items.length} element(s), got ${act.length}`)
      }
      const projected = items.map((e, k) => (k < act.length ? walk(e, act[k], `${path}[${k}]`) : resolveJson(e, vars)))
      return open ? [...projected, ...act.slice(items.length)] : projected
    }
    if (isPlainObject(exp)) {
      if (!isPlainObject(act)) {
        problems.push(`${path}: expected an object, got ${show(act)}`)
        return resolveJson(exp, vars)
      }
      // A key may name a captured value (a view keyed by row ids): it is resolved, never captured.
      const keyed: Record<string, unknown> = Object.fromEntries(
        Object.entries(exp).map(([key, value]) => [hasPlaceholder(key) ? resolveText(key, vars) : key, value]))
      const open = OPEN in keyed
      const matched: Record<string, unknown> = {}
      for (const [key, value] of Object.entries(keyed)) {
        if (key === OPEN) continue
        if (key in act) matched[key] = walk(value, act[key], `${path}.${key}`)
        else problems.push(`${path}: missing key "${key}" (expected ${show(resolveJson(value, vars))})`)
      }
      const projected: Record<string, unknown> = {}
      for (const key of Object.keys(act)) {
        if (key in matched) projected[key] = matched[key]
        else if (open) projected[key] = act[key]
        else problems.push(`${path}: unexpected key "${key}" = ${show(act[key])}`)
      }
      for (const key of Object.keys(keyed)) if (key !== OPEN && !(key in act)) projected[key] = resolveJson(keyed[key], vars)
      return projected
    }
    if (exp === act) return act
    problems.push(`${path}: expected ${show(exp)}, got ${show(act)}`)
    return exp
  }
  const projected = walk(expected, actual, root)
  return { problems, projected }
}

const pretty = (value: unknown) => (JSON.stringify(value, null, 2) ?? "undefined").split("\n")

// ---------------------------------------------------------------------------------------------------------------
// Comparing one response.

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

export const isEventStream = (contentType: string | undefined) => contentType !== undefined && /^text\/event-stream\b/i.test(contentType)

const tryJson = (text: string): { ok: true; value: unknown } | { ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

const indent = (lines: ReadonlyArray<string>, by = "    ") => lines.map((l) => by + l)

/** The expected SSE events of a body. */
export const expectedEvents = (body: string) => splitSseEvents(`${body}\n\n`).events

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
  const render = (events: ReadonlyArray<SseEvent>) => events.flatMap((e) => [...formatSseEvent(e).split("\n"), ""])
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

// ---------------------------------------------------------------------------------------------------------------
// Sending requests.

/** Substitutes captured values into a request; throws when it names a placeholder nothing captured yet. */
export const prepareRequest = (request: TranscriptRequest, vars: Vars): TranscriptRequest => {
  const text = (s: string) =>
    s.replace(PLACEHOLDER, (_, name: string) => {
      if (name === "*") throw new Error(`{{*}} only makes sense in an expected value, not in a request`)
      if (!vars.has(name)) throw new Error(`{{${name}}} is used in a request before any response captured it`)
      return textOf(vars.get(name))
    })
  const substituteJson = (value: unknown): unknown => {
    if (typeof value === "string") {
      const whole = WHOLE_PLACEHOLDER.exec(value)
      if (whole && whole[1] !== "*") {
        text(value) // same errors as textual use
        return vars.get(whole[1])
      }
      return text(value)
    }
    if (Array.isArray(value)) return value.map(substituteJson)
    if (isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substituteJson(v)]))
    return value
  }
  const json = hasPlaceholder(request.body) ? tryJson(request.body) : { ok: false as const }
  return {
    method: request.method,
    target: text(request.target),
    headers: request.headers.map(([name, value]) => [name, text(value)] as const),
    // Without placeholders the body goes out byte for byte, so malformed bodies can be tested too.
    body: json.ok ? JSON.stringify(substituteJson(json.value), null, 2) : hasPlaceholder(request.body) ? text(request.body) : request.body
  }
}

interface ReadPlan extends ReadLimit {
  /** Whether comment events count towards `events`. */
  readonly countComments: boolean
}

const headerText = (value: string | ReadonlyArray<string> | undefined) =>
  value === undefined ? undefined : typeof value === "string" ? value : value.join(", ")

/** Sends one request over node:http (so Host and Origin go out as written) and reads the response per `plan`. */
const send = (baseUrl: URL, request: TranscriptRequest, plan: ReadPlan, timeoutMs: number): Promise<ActualResponse> =>
  new Promise((resolve, reject) => {
    const listed = new Set(request.headers.map(([name]) => name.toLowerCase()))
    const headers: Array<string> = request.headers.flatMap(([name, value]) => [name, value])
    if (!listed.has("host")) headers.push("host", baseUrl.host)
    if (!listed.has("content-length")) headers.push("content-length", String(Buffer.byteLength(request.body)))

    let settled = false
    let timer: NodeJS.Timeout | undefined
    const finish = (result: ActualResponse | Error) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      req.destroy()
      if (result instanceof Error) reject(result)
      else resolve(result)
    }

    const req = http.request(
      { hostname: baseUrl.hostname.replace(/^\[|\]$/g, ""), port: baseUrl.port, method: request.method, path: request.target, headers, agent: false },
      (res) => {
        const status = res.statusCode ?? 0
        const responseHeaders: Record<string, string> = {}
        for (const [name, value] of Object.entries(res.headers)) {
          const text = headerText(value)
          if (text !== undefined) responseHeaders[name] = text
        }
        const streaming = isEventStream(responseHeaders["content-type"])
        let text = ""
        const events: Array<SseEvent> = []
        let pending = ""
        const snapshot = (problem?: string): ActualResponse =>
          ({ status, headers: responseHeaders, text, ...(streaming ? { events } : {}), ...(problem ? { problem } : {}) })
        const counted = () => (plan.countComments ? events.length : events.filter((e) => e.comment === undefined).length)
        const enough = () => streaming && plan.events !== undefined && counted() >= plan.events

        res.setEncoding("utf8")
        res.on("data", (chunk: string) => {
          text += chunk
          if (!streaming) return
          const split = splitSseEvents(pending + chunk)
          pending = split.rest
          for (const event of split.events) {
            if (enough()) break
            events.push(event)
          }
          if (enough()) finish(snapshot())
        })
        // A stream the server cuts off has simply ended; a buffered body cut short is a failure of its own.
        res.on("close", () =>
          finish(res.complete || streaming ? snapshot() : snapshot("the connection closed before the response was complete")))
        if (enough()) finish(snapshot()) // `# read: 0 events`: the headers are all we wanted
        if (streaming && plan.ms !== undefined) setTimeout(() => finish(snapshot()), plan.ms).unref()
        clearTimeout(timer) // the response started: from now on the whole body gets the full timeout
        timer = setTimeout(() =>
          finish(streaming
            ? snapshot(`the stream was still open after ${timeoutMs} ms (add "# read: N events" or "# read: N ms")`)
            : new Error(`no complete response within ${timeoutMs} ms`)), timeoutMs)
      }
    )
    req.on("error", (e) => finish(e))
    timer = setTimeout(() => finish(new Error(`no response within ${timeoutMs} ms`)), timeoutMs)
    req.end(request.body)
  })

// ---------------------------------------------------------------------------------------------------------------
// Replay.

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
