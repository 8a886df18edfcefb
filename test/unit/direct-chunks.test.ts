/**
 * SSE chunks written straight to the socket (direct-chunks.ts), on a real node:http server on port 0: a client
 * reads the same frames, in order, as the response would have written them (strings through the response and
 * buffers past it too), the response's end still closes the body, and where the response is not chunked (an HTTP/1.0 client) the response itself is written to. Chunks the
 * socket takes at once are built in one reused buffer; a blocked stream holds no more memory than it reports to the
 * stream memory budget.
 */
import { describe, expect, it } from "@effect/vitest"
import { vi } from "vitest"
import * as http from "node:http"
import { connect, type AddressInfo } from "node:net"
import { chunkOf, directChunks } from "../../src/http/streams/direct-chunks.ts"
import type { DirectSocket } from "../../src/http/streams/push-sink.ts"
import { makeStreamHub } from "../../src/http/streams/stream-hub.ts"

const serve = (handler: (res: http.ServerResponse) => void) =>
  new Promise<http.Server>((resolve) => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.flushHeaders()
      handler(res)
    })
    server.listen(0, "127.0.0.1", () => resolve(server))
  })

const port = (server: http.Server) => (server.address() as AddressInfo).port

/** The body of a GET's answer (chunked encoding undone by node's client), read to its end. */
const bodyOf = (server: http.Server) =>
  new Promise<string>((resolve, reject) => {
    http.get({ port: port(server), host: "127.0.0.1", agent: false }, (res) => {
      let text = ""
      res.setEncoding("latin1")
      res.on("data", (d) => (text += d))
      res.on("end", () => resolve(text))
    }).on("error", reject)
  })

/** The raw bytes of a request's answer, read until the server closes the connection. */
const raw = (server: http.Server, request: string) =>
  new Promise<string>((resolve, reject) => {
    const socket = connect(port(server), "127.0.0.1", () => socket.write(request))
    let text = ""
    socket.on("data", (d) => (text += d.toString("latin1")))
    socket.on("end", () => resolve(text))
    socket.on("error", reject)
  })

describe("direct chunks", () => {
  it("frames parts as one HTTP chunk", () => {
    expect(chunkOf([Buffer.from("data: "), Buffer.from("7"), Buffer.from("\n\n")], 9).toString()).toBe("9\r\ndata: 7\n\n\r\n")
    expect(chunkOf([Buffer.alloc(300, 97)], 300).subarray(0, 5).toString()).toBe("12c\r\n")
  })

  it("a client reads every frame in order, then the end of the body", async () => {
    let direct = false
    const server = await serve((res) => {
      direct = "writeParts" in directChunks(res)
      const sink = makeStreamHub().open(res, 100)
      for (let i = 1; i <= 3; i++) sink.enqueue(Buffer.from("data: {\"id\":"), Buffer.from(String(i)), Buffer.from("}\n\n"))
      setImmediate(() => {
        sink.enqueue(Buffer.from("data: 4\n\n"))
        sink.close("done", "data: bye\n\n")
      })
    })
    try {
      const body = await bodyOf(server)
      expect(direct).toBe(true)
      expect(body).toBe("data: {\"id\":1}\n\ndata: {\"id\":2}\n\ndata: {\"id\":3}\n\ndata: 4\n\ndata: bye\n\n")
    } finally {
      server.close()
    }
  })

  it("a string (through the response) and whole buffers (straight to the socket) reach the client in the order written", async () => {
    // Strings go through node's response, buffers past it: both must land in the socket's one queue in call order,
    // also within one tick (while node's response has the socket corked) and with the socket full.
    const server = await serve((res) => {
      const out = directChunks(res) as DirectSocket
      out.write("data: s1\n\n")
      out.write(Buffer.from("data: b1\n\n"))
      out.write("data: s2\n\n")
      out.writeParts([Buffer.from("data: p1\n\n")], 10)
      out.write(Buffer.alloc(256 * 1024, "x")) // more than the socket takes at once: node queues it
      out.write("data: s3\n\n")
      out.write(Buffer.from("data: b2\n\n"))
      setImmediate(() => {
        out.write(Buffer.from("data: b3\n\n"))
        out.write("data: s4\n\n")
        out.end()
      })
    })
    try {
      const body = await bodyOf(server)
      expect(body.replace(/x+/, "X")).toBe("data: s1\n\ndata: b1\n\ndata: s2\n\ndata: p1\n\nXdata: s3\n\ndata: b2\n\ndata: b3\n\ndata: s4\n\n")
      expect(body.length).toBe(256 * 1024 + 8 * 10)
    } finally {
      server.close()
    }
  })

  it("leaves a response that is not chunked (HTTP/1.0) to node", async () => {
    let direct = true
    const server = await serve((res) => {
      direct = "writeParts" in directChunks(res)
      const sink = makeStreamHub().open(res, 100)
      sink.enqueue(Buffer.from("data: 1\n\n"))
      setImmediate(() => sink.close("done"))
    })
    try {
      const text = await raw(server, "GET / HTTP/1.0\r\n\r\n")
      expect(direct).toBe(false)
      expect(text.endsWith("\r\n\r\ndata: 1\n\n")).toBe(true)
    } finally {
      server.close()
    }
  })

  it("builds chunks the socket takes at once in one reused buffer, and never writes over a chunk it kept", async () => {
    const buffers: Array<ArrayBufferLike> = []
    const server = await serve((res) => {
      const socket = res.socket!
      const write = socket.write.bind(socket)
      // Observed, not replaced: which memory each chunk was built in.
      socket.write = ((chunk: Buffer, ...rest: Array<never>) => (buffers.push(chunk.buffer), write(chunk, ...rest))) as typeof socket.write
      const direct = directChunks(res) as DirectSocket
      // Frames of 5,000 bytes: past what node would take from its shared pool of small buffers.
      const frame = (n: number) => [Buffer.from(`data: ${String(n).repeat(4992)}\n\n`)]
      direct.writeParts(frame(1), 5000)
      direct.writeParts(frame(2), 5000)
      // Corked, the socket keeps what it is given: each chunk must be built elsewhere.
      socket.cork()
      direct.writeParts(frame(3), 5000)
      direct.writeParts(frame(4), 5000)
      socket.uncork()
      setImmediate(() => {
        direct.writeParts(frame(5), 5000)
        setImmediate(() => res.end())
      })
    })
    try {
      const body = await bodyOf(server)
      expect(body).toBe([1, 2, 3, 4, 5].map((n) => `data: ${String(n).repeat(4992)}\n\n`).join(""))
      expect(buffers[1]).toBe(buffers[0])
      expect(new Set(buffers.slice(0, 4)).size).toBe(3)
      expect(buffers[4]).toBe(buffers[0])
    } finally {
      server.close()
    }
  })

  it("a stream whose client stopped reading holds no more memory than it reports to the budget", async () => {
    /** Every buffer handed to the socket, and whether the socket is done with it. */
    const writes: Array<{ readonly chunk: Buffer | string; done: boolean }> = []
    let report: { held: number; counted: number; blocked: number } | undefined
    const server = await serve((res) => {
      const socket = res.socket!
      const write = socket.write.bind(socket) as (chunk: Buffer | string, ...rest: Array<unknown>) => boolean
      // Observed, not replaced: each write's buffer, and its completion (chained to the caller's callback, if any).
      socket.write = ((chunk: Buffer | string, a?: unknown, b?: unknown) => {
        const entry = { chunk, done: false }
        writes.push(entry)
        const cb = typeof a === "function" ? a : typeof b === "function" ? b : undefined
        const done = (err?: Error | null) => {
          entry.done = true
          cb?.(err)
        }
        return typeof a === "string" ? write(chunk, a, done) : write(chunk, done)
      }) as typeof socket.write
      const hub = makeStreamHub()
      const sink = hub.open(res, 1_000_000)
      // Frames of ~40 KB: each chunk fits a 64 KiB buffer, with room to spare that a kept chunk would pin.
      const frame = Buffer.alloc(40_000, 97)
      const step = (n: number) => {
        if (hub.budget.stats().backlogged > 0 || n === 0) {
          // Blocked (or given up): what the socket still holds, each backing store once, against what is counted.
          const stores = new Set<ArrayBufferLike>()
          let held = 0
          for (const w of writes) {
            if (w.done) continue
            if (typeof w.chunk === "string") held += Buffer.byteLength(w.chunk)
            else if (!stores.has(w.chunk.buffer)) {
              stores.add(w.chunk.buffer)
              held += w.chunk.buffer.byteLength
            }
          }
          report = { held, counted: sink.backlog(), blocked: hub.budget.stats().backlogged }
          res.destroy()
          return
        }
        sink.enqueue(Buffer.from("data: "), frame, Buffer.from("\n\n"))
        setImmediate(() => step(n - 1))
      }
      step(2000)
    })
    const client = connect(port(server), "127.0.0.1", () => {
      client.write("GET / HTTP/1.1\r\nhost: x\r\n\r\n")
      client.pause() // reads nothing: the server's socket fills
    })
    client.on("error", () => {})
    try {
      await vi.waitFor(() => expect(report).toBeDefined(), { timeout: 30_000, interval: 20 })
      expect(report!.blocked).toBe(1)
      expect(report!.held).toBeGreaterThan(0)
      expect(report!.held).toBeLessThanOrEqual(report!.counted)
    } finally {
      client.destroy()
      server.close()
    }
  })
})
