/**
 * A chunked SSE response whose live frames are written straight to its TCP socket: each flush of a push sink is
 * one HTTP/1.1 chunk (size line, data, CRLF) built in one buffer and handed to `net.Socket.write`, one `write(2)`.
 *
 * Hand-tuned (bench/readers-ab.ts, issue 25): `ServerResponse.write` frames a chunk as four socket writes under a
 * cork, uncorked on a `process.nextTick` per call, so each one cost a tick, an array and a `writev(2)` of four
 * buffers: with 1,000 streams the fan-out's largest cost. Only once the head is on the socket and the response
 * is chunked with nothing of its own buffered; otherwise the response itself is used. `end` is the response's
 * (it writes the last chunk), so the HTTP state stays node's.
 */
import type * as http from "node:http"
import type { Socket } from "node:net"
import type { DirectSocket, SocketLike } from "./push-sink.ts"

const CR = 13
const LF = 10

/** What node's ServerResponse keeps and this reads (not in its public types). */
type Response = http.ServerResponse & { readonly chunkedEncoding?: boolean; readonly outputData?: ReadonlyArray<unknown> }

const isResponse = (s: SocketLike): s is SocketLike & Response => "headersSent" in s && "socket" in s

/** An HTTP chunk of `bytes` data bytes from `parts`, in one buffer. */
export const chunkOf = (parts: ReadonlyArray<Buffer>, bytes: number): Buffer => {
  const size = bytes.toString(16)
  const chunk = Buffer.allocUnsafe(size.length + bytes + 4)
  let at = chunk.write(size, 0, "latin1")
  chunk[at++] = CR
  chunk[at++] = LF
  for (const p of parts) at += p.copy(chunk, at)
  chunk[at++] = CR
  chunk[at] = LF
  return chunk
}

/**
 * A live stream's socket, for as long as the stream is open: one class, its methods shared (heap per open stream,
 * bench/stream-memory.ts).
 */
class DirectChunks implements DirectSocket {
  constructor(private readonly res: Response, private readonly socket: Socket) {}
  writeParts(parts: ReadonlyArray<Buffer>, bytes: number): boolean {
    // An empty chunk would end the body: never write one.
    return bytes === 0 ? !this.socket.writableNeedDrain : this.socket.write(chunkOf(parts, bytes))
  }
  // Whole frames (a replay's batches, tens of kB; a heartbeat; the last words) stay the response's: node writes
  // a big one without copying it, and they are not per stream per change. Both end up on the socket in order.
  write(data: Buffer | string): boolean {
    return this.res.write(data)
  }
  once(event: "drain" | "close", listener: () => void) {
    return this.socket.once(event, listener)
  }
  off(event: "drain" | "close", listener: () => void) {
    return this.socket.off(event, listener)
  }
  end() {
    return this.res.end()
  }
  destroy() {
    return this.res.destroy()
  }
  get writableLength() {
    return this.socket.writableLength
  }
  get destroyed() {
    return this.res.destroyed || this.socket.destroyed
  }
}

/** The response's socket as a SocketLike that writes whole chunks, or the response itself when that is not safe. */
export const directChunks = (res: SocketLike): SocketLike | DirectSocket => {
  if (!isResponse(res)) return res
  const socket: Socket | null = res.socket
  if (socket === null || res.chunkedEncoding !== true || !res.headersSent || res.writableEnded || (res.outputData?.length ?? 1) > 0) return res
  return new DirectChunks(res, socket)
}
