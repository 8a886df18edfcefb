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

/** The response's socket as a SocketLike that writes whole chunks, or the response itself when that is not safe. */
export const directChunks = (res: SocketLike): SocketLike | DirectSocket => {
  if (!isResponse(res)) return res
  const socket: Socket | null = res.socket
  if (socket === null || res.chunkedEncoding !== true || !res.headersSent || res.writableEnded || (res.outputData?.length ?? 1) > 0) return res
  return {
    writeParts: (parts, bytes) =>
      // An empty chunk would end the body: never write one.
      bytes === 0 ? !socket.writableNeedDrain : socket.write(chunkOf(parts, bytes)),
    // Whole frames (a replay's batches, tens of kB; a heartbeat; the last words) stay the response's: node writes
    // a big one without copying it, and they are not per stream per change. Both end up on the socket in order.
    write: (data) => res.write(data),
    once: (event, listener) => socket.once(event, listener),
    off: (event, listener) => socket.off(event, listener),
    end: () => res.end(),
    destroy: () => res.destroy(),
    get writableLength() {
      return socket.writableLength
    },
    get destroyed() {
      return res.destroyed || socket.destroyed
    }
  }
}
