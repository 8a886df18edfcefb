/**
 * A raw HTTP client for fuzzing: keep-alive, any method, headers as given (arrays send a header twice), bodies
 * as bytes. A buffered answer is read whole; an SSE answer is read until it ends or goes quiet for `sseIdleMs`
 * (a listen or GET stream never ends by itself), then the connection is dropped.
 */
import * as http from "node:http"
import * as net from "node:net"
import { isEventStream } from "../src/support/sse.ts"
import { sseDataPayloads } from "./sse.ts"

export interface FuzzRequest {
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string | ReadonlyArray<string>>
  readonly body?: Buffer
  readonly sseIdleMs?: number
}

export interface FuzzAnswer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
  /** For text/event-stream: the data of each event, in order. */
  readonly events?: ReadonlyArray<string>
  /** True when we dropped a stream that was still open. */
  readonly cut: boolean
}

export const makeFuzzClient = (url: string) => {
  const { hostname, port } = new URL(url)
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const send = (r: FuzzRequest) =>
    new Promise<FuzzAnswer>((resolve, reject) => {
      // Content-Length always, so no method's body is left unframed (node's client would not frame an OPTIONS body).
      const framing = r.body !== undefined && r.body.length > 0 && !Object.keys(r.headers).some((k) => /^(content-length|transfer-encoding)$/i.test(k))
        ? { "content-length": String(r.body.length) }
        : {}
      const headers = { ...r.headers, ...framing } as http.OutgoingHttpHeaders
      const req = http.request({ host: hostname, port, method: r.method, path: r.path, headers, agent }, (res) => {
        const chunks: Array<Buffer> = []
        const sse = isEventStream(res.headers["content-type"])
        let idle: NodeJS.Timeout | undefined
        let cut = false
        const finish = () => {
          clearTimeout(idle)
          const body = Buffer.concat(chunks).toString("utf8")
          const events = sse ? sseDataPayloads(body) : undefined
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, events, cut })
        }
        const arm = () => {
          clearTimeout(idle)
          idle = setTimeout(() => {
            cut = true
            res.destroy()
            finish()
          }, r.sseIdleMs ?? 1000)
        }
        if (sse) arm()
        res.on("data", (c: Buffer) => {
          chunks.push(c)
          if (sse) arm()
        })
        res.on("end", () => cut || finish())
        res.on("error", () => cut || finish())
      })
      req.on("error", reject)
      req.end(r.body)
    })
  return { send, close: () => agent.destroy() }
}

/** Writes raw bytes on a fresh connection and collects whatever comes back until the server closes it (or `ms`). */
export const sendRawBytes = (url: string, bytes: Buffer, ms = 1500) =>
  new Promise<{ text: string; closedByServer: boolean }>((resolve) => {
    const { hostname, port } = new URL(url)
    const socket = net.connect(Number(port), hostname)
    let text = ""
    let done = false
    const end = (closedByServer: boolean) => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      resolve({ text, closedByServer })
    }
    const timer = setTimeout(() => end(false), ms)
    socket.setEncoding("latin1")
    socket.on("data", (c: string) => (text += c))
    socket.on("close", () => end(true))
    socket.on("error", () => end(true))
    socket.write(bytes)
  })
