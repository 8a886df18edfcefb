/**
 * SSE chunks written straight to the socket (direct-chunks.ts), on a real node:http server on port 0: a client
 * reads the same frames, in order, as the response would have written them, the response's end still closes the
 * body, and where the response is not chunked (an HTTP/1.0 client) the response itself is written to.
 */
import { describe, expect, it } from "@effect/vitest"
import * as http from "node:http"
import { connect, type AddressInfo } from "node:net"
import { chunkOf, directChunks } from "../../src/http/direct-chunks.ts"
import { makeStreamHub } from "../../src/http/stream-hub.ts"

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
      const body = await new Promise<string>((resolve, reject) => {
        http.get({ port: port(server), host: "127.0.0.1", agent: false }, (res) => {
          let text = ""
          res.setEncoding("utf8")
          res.on("data", (d) => (text += d))
          res.on("end", () => resolve(text))
        }).on("error", reject)
      })
      expect(direct).toBe(true)
      expect(body).toBe("data: {\"id\":1}\n\ndata: {\"id\":2}\n\ndata: {\"id\":3}\n\ndata: 4\n\ndata: bye\n\n")
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
})
