/** A small SSE reader over node:http for tests: read events as they come, with timeouts, then close. */
import * as http from "node:http"

export interface SseMessage {
  readonly id?: string
  readonly event?: string
  readonly data: string
  readonly comment?: string
}

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

export const openSse = (url: string, init: { method?: string; headers?: Record<string, string>; body?: string; comments?: boolean } = {}): Promise<SseConnection> =>
  new Promise((resolve, reject) => {
    const req = http.request(url, { method: init.method ?? "GET", headers: init.headers }, (res) => {
      const queue: Array<SseMessage> = []
      const waiters: Array<() => void> = []
      let buffer = ""
      let ended = false
      const wake = () => waiters.splice(0).forEach((w) => w())
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        buffer += chunk
        let at: number
        while ((at = buffer.indexOf("\n\n")) !== -1) {
          const block = buffer.slice(0, at)
          buffer = buffer.slice(at + 2)
          const msg: { id?: string; event?: string; data: Array<string>; comment?: string } = { data: [] }
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) msg.comment = line.slice(1).trim()
            else if (line.startsWith("id:")) msg.id = line.slice(3).trim()
            else if (line.startsWith("event:")) msg.event = line.slice(6).trim()
            else if (line.startsWith("data:")) msg.data.push(line.slice(5).replace(/^ /, ""))
          }
          if (msg.comment !== undefined && msg.data.length === 0 && !init.comments) continue
          queue.push({ id: msg.id, event: msg.event, data: msg.data.join("\n"), comment: msg.comment })
        }
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
