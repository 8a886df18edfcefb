/**
 * The one text/event-stream parser of test/, bench/ and scripts/, and the streaming SSE reader the tests use.
 * (src/ has its own for the recorder and the console page: product code does not import the testkit.)
 *
 * Parsing follows the EventSource rules where they matter here: CRLF, CR and LF all end a line; a blank line ends
 * an event; `data:` lines are joined with "\n"; one space after the colon is dropped. A block of comment lines
 * only (`: heartbeat`) is a comment event. An event with an `id:` and no data (a 2025-11-25 priming event) is kept
 * with `data: ""`; callers that want payloads only use `sseDataPayloads`.
 */
import * as http from "node:http"

/** One server-sent event. `data` is "" when the event carried no data lines. */
export interface SseMessage {
  readonly id?: string
  readonly event?: string
  readonly retry?: string
  readonly data: string
  /** The comment lines of the block (after `:`, trimmed), joined with "\n". */
  readonly comment?: string
}

/** Blocks that held comment lines and nothing else. */
const commentOnly = new WeakSet<SseMessage>()

const parseBlock = (block: string): SseMessage | undefined => {
  if (block === "") return undefined
  let id: string | undefined
  let event: string | undefined
  let retry: string | undefined
  const data: Array<string> = []
  const comments: Array<string> = []
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) {
      comments.push(line.slice(1).trim())
      continue
    }
    const colon = line.indexOf(":")
    const name = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "")
    if (name === "data") data.push(value)
    else if (name === "id") id = value.trim()
    else if (name === "event") event = value.trim()
    else if (name === "retry") retry = value.trim()
  }
  const message: SseMessage = {
    ...(id !== undefined ? { id } : {}),
    ...(event !== undefined ? { event } : {}),
    ...(retry !== undefined ? { retry } : {}),
    data: data.join("\n"),
    ...(comments.length > 0 ? { comment: comments.join("\n") } : {})
  }
  if (comments.length > 0 && data.length === 0) commentOnly.add(message)
  return message
}

/** True for a block that held comment lines and no data lines (a heartbeat). */
export const isCommentOnly = (m: SseMessage) => commentOnly.has(m)

/** An incremental parser: feed it chunks as they arrive; it returns the events each chunk completed. */
export const sseParser = () => {
  let buffer = ""
  let pendingCr = false
  return {
    push(chunk: string): Array<SseMessage> {
      let text = (pendingCr ? "\r" : "") + chunk
      // A CR at the end may be the first half of a CRLF: keep it for the next chunk.
      pendingCr = text.endsWith("\r")
      if (pendingCr) text = text.slice(0, -1)
      buffer += text.replace(/\r\n?/g, "\n")
      const out: Array<SseMessage> = []
      let at: number
      while ((at = buffer.indexOf("\n\n")) !== -1) {
        const m = parseBlock(buffer.slice(0, at))
        buffer = buffer.slice(at + 2)
        if (m !== undefined) out.push(m)
      }
      return out
    },
    /** The unterminated tail (the start of the next event). */
    rest: () => buffer + (pendingCr ? "\r" : "")
  }
}

/** Every event of a fully buffered body; an unterminated last event counts (the stream ended with it). */
export const parseSse = (body: string): Array<SseMessage> => {
  const parser = sseParser()
  const events = parser.push(body)
  const tail = parseBlock(parser.rest().replace(/\r\n?/g, "\n").replace(/\n+$/, ""))
  return tail === undefined ? events : [...events, tail]
}

/** The non-empty `data` payloads of a fully buffered body, in order (comments and priming events dropped). */
export const sseDataPayloads = (body: string): Array<string> => parseSse(body).flatMap((m) => (m.data.length > 0 ? [m.data] : []))

/** Heuristic for bodies whose Content-Type we were not given. */
export const looksLikeSse = (body: string): boolean => /^(data|event|id|retry):|^:/.test(body)

// ---------------------------------------------------------------------------------------------------------------
// A streaming reader over node:http: read events as they come, with timeouts, then close.

export interface SseConnection {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  /** The next event (comments included when `comments` is set), or undefined after `timeoutMs` or at the end. */
  readonly next: (timeoutMs?: number) => Promise<SseMessage | undefined>
  /** Data events whose JSON is a notification or response, skipping comments and empty priming events. */
  readonly nextJson: (timeoutMs?: number) => Promise<{ id?: string; json: any } | undefined>
  readonly ended: () => boolean
  readonly close: () => void
  /** Stops reading from the socket, so the server's writes back up (a stalled reader). */
  readonly pause: () => void
  readonly resume: () => void
}

export const openSse = (
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; comments?: boolean } = {}
): Promise<SseConnection> =>
  new Promise((resolve, reject) => {
    const req = http.request(url, { method: init.method ?? "GET", headers: init.headers }, (res) => {
      const queue: Array<SseMessage> = []
      const waiters: Array<() => void> = []
      const parser = sseParser()
      let ended = false
      const wake = () => waiters.splice(0).forEach((w) => w())
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        for (const m of parser.push(chunk)) if (init.comments || !isCommentOnly(m)) queue.push(m)
        wake()
      })
      const finish = () => {
        ended = true
        wake()
      }
      res.on("end", finish)
      res.on("close", finish)
      res.on("error", finish)
      const next = (timeoutMs = 2000) =>
        new Promise<SseMessage | undefined>((done) => {
          const take = () => {
            if (queue.length) return done(queue.shift())
            if (ended) return done(undefined)
            const waiter = () => {
              clearTimeout(timer)
              take()
            }
            // A waiter that timed out must leave the list, or it would swallow the next event.
            const timer = setTimeout(() => {
              const i = waiters.indexOf(waiter)
              if (i >= 0) waiters.splice(i, 1)
              done(undefined)
            }, timeoutMs)
            waiters.push(waiter)
          }
          take()
        })
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        next,
        nextJson: async (timeoutMs = 2000) => {
          for (;;) {
            const m = await next(timeoutMs)
            if (m === undefined) return undefined
            if (m.data.trim() === "") continue
            return { id: m.id, json: JSON.parse(m.data) }
          }
        },
        ended: () => ended,
        close: () => req.destroy(),
        pause: () => res.pause(),
        resume: () => res.resume()
      })
    })
    req.on("error", reject)
    req.end(init.body)
  })
