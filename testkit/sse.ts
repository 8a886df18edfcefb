/**
 * The test kit's side of Server-Sent Events: helpers over the one SSE codec (src/support/sse.ts), and a streaming
 * reader the tests use. An event with an `id:` and empty data (a 2025-11-25 priming event) is an event like any
 * other; callers that want payloads only use `sseDataPayloads`.
 */
import * as http from "node:http"
import { parseSse, sseParser, type SseEvent } from "../src/support/sse.ts"

/**
 * The non-empty `data` payloads of a fully buffered body, in order (comments and priming events dropped). An
 * unterminated last event counts: the stream ended with it.
 */
export const sseDataPayloads = (body: string): Array<string> => parseSse(`${body}\n\n`).flatMap((m) => (m.data ? [m.data] : []))

/** Heuristic for bodies whose Content-Type we were not given. */
export const looksLikeSse = (body: string): boolean => /^(data|event|id|retry):|^:/.test(body)

// ---------------------------------------------------------------------------------------------------------------
// A streaming reader over node:http: read events as they come, with timeouts, then close.

/** How long `next()` and `nextJson()` wait for an event unless told otherwise. */
export const NEXT_TIMEOUT_MS = 30_000

export interface SseConnection {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  /**
   * The next event (comment events included when `comments` is set), or undefined after `timeoutMs` or at the end.
   * The default bound is generous (NEXT_TIMEOUT_MS): a wait ends as soon as the event comes, and a loaded machine can
   * take seconds to deliver one. A test that checks nothing more comes passes a short timeout of its own.
   */
  readonly next: (timeoutMs?: number) => Promise<SseEvent | undefined>
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
      const queue: Array<SseEvent> = []
      const waiters: Array<() => void> = []
      const parser = sseParser()
      let ended = false
      const wake = () => waiters.splice(0).forEach((w) => w())
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        for (const m of parser.push(chunk)) if (init.comments || m.comment === undefined) queue.push(m)
        wake()
      })
      const finish = () => {
        ended = true
        wake()
      }
      res.on("end", finish)
      res.on("close", finish)
      res.on("error", finish)
      const next = (timeoutMs = NEXT_TIMEOUT_MS) =>
        new Promise<SseEvent | undefined>((done) => {
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
        nextJson: async (timeoutMs = NEXT_TIMEOUT_MS) => {
          for (;;) {
            const m = await next(timeoutMs)
            if (m === undefined) return undefined
            if (m.data === undefined || m.data.trim() === "") continue
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

/** The events of `/api/_events` from the start (`query` appended), until none comes for 1.5 s. */
export const eventTail = async (url: string, query = "", headers: Record<string, string> = {}): Promise<Array<any>> => {
  const sse = await openSse(`${url}/api/_events?from=1${query}`, { headers: { accept: "text/event-stream", ...headers } })
  try {
    const events: Array<any> = []
    for (let m = await sse.nextJson(1500); m !== undefined; m = await sse.nextJson(1500)) events.push(m.json)
    return events
  } finally {
    sse.close()
  }
}
