/**
 * A stand-in for a response socket in unit tests of push sinks: it records what is written, answers `write`
 * with "room left" until told it is full, and emits `drain` when it is emptied.
 */
import { EventEmitter } from "node:events"
import type { SocketLike } from "../src/http/streams/push-sink.ts"

export class FakeSocket extends EventEmitter implements SocketLike {
  readonly chunks: Array<string> = []
  /** The chunks as given to `write` (the same objects). */
  readonly written: Array<Buffer | string> = []
  writes = 0
  ended = false
  destroyed = false
  writableLength = 0
  private full = false

  write(chunk: Buffer | string): boolean {
    this.writes++
    this.chunks.push(chunk.toString())
    this.written.push(chunk)
    if (this.full) this.writableLength += chunk.length
    return !this.full
  }
  end() {
    this.ended = true
  }
  destroy() {
    this.destroyed = true
  }
  /** Reading stops (true) or resumes (false: the socket empties and emits drain). */
  stall(full: boolean) {
    this.full = full
    if (!full) {
      this.writableLength = 0
      this.emit("drain")
    }
  }
  text() {
    return this.chunks.join("")
  }
}
