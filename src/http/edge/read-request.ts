/**
 * Reading a request on a connection: the body limit (declared or as it arrives), the body read a chunk per step
 * (its JSON shape scanned, a declared length copied into one buffer), then the request dispatched (dispatch.ts).
 */
import type * as http from "node:http"
import { edgeError } from "./edge-error.ts"
import { isJsonContentType } from "./json-body.ts"
import { JsonScan } from "./json-scan.ts"
import { longWork } from "../../support/turnstile.ts"
import { writeBuffered, type Buffered } from "./answer.ts"
import type { CappedConnections } from "./connection-caps.ts"
import { parseTarget } from "./dispatch.ts"

const tooLarge = (target: string | undefined, limit: number) =>
  edgeError(parseTarget(target)?.pathname, 413, "PayloadTooLarge", `request body exceeds ${limit} bytes`, { connection: "close" }) as Buffered

/** The server's request listener: `connections` counts each request (when capped); `dispatch` takes it once read. */
export const readRequests = (
  bodyLimit: number,
  connections: CappedConnections | undefined,
  dispatch: (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer, bodyShape: JsonScan | undefined) => void
) =>
  (req: http.IncomingMessage, res: http.ServerResponse) => {
    connections?.requestStarted(req, res)
    const declared = Number(req.headers["content-length"] ?? 0)
    if (declared > bodyLimit) {
      writeBuffered(res, tooLarge(req.url, bodyLimit))
      req.resume()
      return
    }
    const chunks: Array<Buffer> = []
    let size = 0
    let rejected = false
    // A body is read as it arrives, a chunk per step, rather than in one long step once it is all here: a JSON
    // body's shape is scanned, and a body of several chunks whose length was declared is copied into one
    // buffer of that length (its pages are only touched, so only resident, as the bytes arrive).
    let shape: JsonScan | undefined
    let whole: Buffer | undefined
    let first = true
    req.on("data", (chunk: Buffer) => {
      if (rejected) return
      if (first) {
        first = false
        if (isJsonContentType(req.headers["content-type"])) shape = new JsonScan()
        if (declared > chunk.length) whole = Buffer.allocUnsafe(declared)
      }
      if (size + chunk.length > bodyLimit) {
        rejected = true
        writeBuffered(res, tooLarge(req.url, bodyLimit), () => req.destroy())
        return
      }
      if (whole !== undefined && size + chunk.length <= whole.length) chunk.copy(whole, size)
      else chunks.push(chunk)
      size += chunk.length
      shape?.feed(chunk)
      // Past its first chunk a body is long work: one chunk per turn of the process's turnstile (turnstile.ts),
      // so that a few large bodies arriving at once (libuv reads up to 32 chunks per socket in one go) do not
      // hold requests that arrive meanwhile for tens of milliseconds.
      if (size > chunk.length) {
        req.pause()
        longWork.enter(() => req.resume())
      }
    })
    req.on("end", () => {
      if (rejected) return
      const body = whole !== undefined
        ? (chunks.length === 0 ? whole.subarray(0, size) : Buffer.concat([whole.subarray(0, size - chunks.reduce((n, c) => n + c.length, 0)), ...chunks]))
        : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)
      // These listeners stay on the request while its stream is open (heap snapshot): they must not keep the body.
      chunks.length = 0
      whole = undefined
      const bodyShape = shape
      shape = undefined
      dispatch(req, res, body, bodyShape)
    })
    req.on("error", () => res.destroy())
  }
