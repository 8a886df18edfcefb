/**
 * Sending one exchange's request: captured values substituted, then sent over node:http (so Host and Origin go
 * out as written), and the response read as the exchange's `# read:` plan says.
 */
import * as http from "node:http"
import { isEventStream, sseParser, type SseEvent } from "../../support/sse.ts"
import type { ActualResponse } from "./compare.ts"
import { hasPlaceholder, isPlainObject, PLACEHOLDER, textOf, tryJson, WHOLE_PLACEHOLDER, type Vars } from "./match.ts"
import type { ReadLimit, TranscriptRequest } from "./parse.ts"

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

export interface ReadPlan extends ReadLimit {
  /** Whether comment events count towards `events`. */
  readonly countComments: boolean
}

const headerText = (value: string | ReadonlyArray<string> | undefined) =>
  value === undefined ? undefined : typeof value === "string" ? value : value.join(", ")

/** Sends one request over node:http (so Host and Origin go out as written) and reads the response per `plan`. */
export const send = (baseUrl: URL, request: TranscriptRequest, plan: ReadPlan, timeoutMs: number): Promise<ActualResponse> =>
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
        const parser = sseParser()
        const snapshot = (problem?: string): ActualResponse =>
          ({ status, headers: responseHeaders, text, ...(streaming ? { events } : {}), ...(problem ? { problem } : {}) })
        const counted = () => (plan.countComments ? events.length : events.filter((e) => e.comment === undefined).length)
        const enough = () => streaming && plan.events !== undefined && counted() >= plan.events

        res.setEncoding("utf8")
        res.on("data", (chunk: string) => {
          text += chunk
          if (!streaming) return
          for (const event of parser.push(chunk)) {
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
