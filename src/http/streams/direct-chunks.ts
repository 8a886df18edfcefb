/**
 * A chunked SSE response whose live frames are written straight to its TCP socket: each flush of a push sink is
 * one HTTP/1.1 chunk (size line, data, CRLF) built in one buffer and handed to `net.Socket.write`, one `write(2)`.
 *
 * Hand-tuned (bench/readers-ab.ts): `ServerResponse.write` frames a chunk as four socket writes under a
 * cork, uncorked on a `process.nextTick` per call, so each one costs a tick, an array and a `writev(2)` of four
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

/** The length of an HTTP chunk of `bytes` data bytes: size line, data, CRLF. */
const chunkLength = (bytes: number): number => bytes.toString(16).length + bytes + 4

/** An HTTP chunk of `bytes` data bytes from `parts`, in one buffer: `into` (from its start) when given. */
export const chunkOf = (parts: ReadonlyArray<Buffer>, bytes: number, into?: Buffer): Buffer => {
  const size = bytes.toString(16)
  const length = size.length + bytes + 4
  const chunk = into !== undefined ? into.subarray(0, length) : Buffer.allocUnsafeSlow(length)
  let at = chunk.write(size, 0, "latin1")
  chunk[at++] = CR
  chunk[at++] = LF
  for (const p of parts) at += p.copy(chunk, at)
  chunk[at++] = CR
  chunk[at] = LF
  return chunk
}

/**
 * The buffers chunks are built in, reused while each chunk is written whole at once, one per power of two from 1 KiB
 * to 64 KiB (a chunk goes in the smallest that fits it). Hand-tuned (bench/fan-out-writes-ab.ts, 1,000 unread
 * streams): chunks of 40 frames (~6.8 KB, past node's pool of small buffers, as the paced fan-out writes under load)
 * cost 0.43 µs of CPU per frame against 0.66 with a fresh buffer each; one frame a write, the same. Node keeps
 * a written buffer only when it could not write it at once; a socket that keeps one keeps at most twice its chunk's
 * bytes, and the stream reports them all to the memory budget (stream-budget.ts) while it does.
 */
const MIN_SCRATCH_LOG2 = 10
const MAX_SCRATCH = 64 * 1024
const scratch: Array<Buffer> = Array.from({ length: 17 - MIN_SCRATCH_LOG2 }, (_, i) => Buffer.allocUnsafeSlow(1 << (MIN_SCRATCH_LOG2 + i)))
/** The index in `scratch` of the smallest buffer that holds `length` bytes (1 to MAX_SCRATCH). */
const scratchClass = (length: number): number => Math.max(0, 32 - Math.clz32(length - 1) - MIN_SCRATCH_LOG2)

/** Whole frames as HTTP chunks, by the buffer they frame: built once for every stream that writes the same buffer. */
const framed = new WeakMap<Buffer, Buffer>()

/**
 * A live stream's socket, for as long as the stream is open: one class, its methods shared (heap per open stream,
 * bench/stream-memory.ts).
 */
class DirectChunks implements DirectSocket {
  /** Bytes of a scratch buffer the socket holds beyond its chunk (see `writeParts`), until it has written everything. */
  private slack = 0
  constructor(private readonly res: Response, private readonly socket: Socket) {}
  writeParts(parts: ReadonlyArray<Buffer>, bytes: number): boolean {
    const socket = this.socket
    // An empty chunk would end the body: never write one.
    if (bytes === 0) return !socket.writableNeedDrain
    const length = chunkLength(bytes)
    // Something waits already (or the socket is corked): node will keep this chunk too, so it gets a buffer of its
    // own, exactly its size (what the memory budget counts); not a slice of node's shared pool, which would pin it.
    if (length > MAX_SCRATCH || socket.writableLength > 0 || socket.writableCorked > 0) return socket.write(chunkOf(parts, bytes))
    const k = scratchClass(length)
    const chunk = chunkOf(parts, bytes, scratch[k])
    const ok = socket.write(chunk)
    if (socket.writableLength > 0) {
      // The kernel took part of it and node keeps the rest, and with it the whole scratch buffer: that one is the
      // socket's until it drains (counted in `writableLength` below), and the next chunks of its size get a new one.
      this.slack = scratch[k].length - length
      scratch[k] = Buffer.allocUnsafeSlow(scratch[k].length)
    }
    return ok
  }
  // Whole frames (a replay's pages, tens of kB; a heartbeat; the last words): a buffer goes out as one chunk, framed
  // once however many streams write it (a catch-up page is written to every reader that passes it), in one socket
  // write. Hand-tuned (bench/readers-alternated.ts): through the response, each was a cork, three writes and a
  // `writev` on the next tick, the largest share of a catch-up's CPU. A string (the last words) stays the response's:
  // with its head sent and nothing of its own buffered, the response writes to the same socket at once, so strings
  // and buffers keep their call order (test/unit/direct-chunks.test.ts).
  write(data: Buffer | string): boolean {
    if (typeof data === "string" || data.length === 0) return this.res.write(data)
    let chunk = framed.get(data)
    if (chunk === undefined) framed.set(data, (chunk = chunkOf([data], data.length)))
    return this.socket.write(chunk)
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
  /** What the socket holds: its queued bytes, and the rest of a scratch buffer it keeps (see `writeParts`). */
  get writableLength() {
    const n = this.socket.writableLength
    if (n === 0) this.slack = 0
    return n + this.slack
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
