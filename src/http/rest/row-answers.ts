/**
 * The answers to GETs of recently read rows, by row object (a change makes a new row; none is changed in place), so
 * a row read again is answered with the bytes, ETag and headers made the first time: no JSON, etag or headers
 * object per read. The headers carry their Content-Length, so the edge writes them as they are (edge.ts).
 * Bounded by the bytes of their bodies, oldest first out; a hit does not reorder (a read costs one lookup).
 */
import type { Row } from "../../domain/catalog.ts"
import type { EdgeResponse } from "../edge/edge-types.ts"

interface Kept {
  readonly answer: EdgeResponse
  readonly bytes: number
}

/** The bodies kept at most: about 40,000 rows of 100 bytes. */
export const ROW_ANSWER_BYTES = 4 * 1024 * 1024

export const etagOf = (row: Row) => `"${row.version}"`

export class RowAnswers {
  private readonly kept = new Map<Row, Kept>()
  private bytes = 0

  constructor(private readonly maxBytes = ROW_ANSWER_BYTES) {}

  /** 200 with the row as JSON and its ETag. */
  answer(row: Row): EdgeResponse {
    const kept = this.kept.get(row)
    if (kept !== undefined) return kept.answer
    const body = JSON.stringify(row)
    const bytes = Buffer.byteLength(body)
    const answer: EdgeResponse = {
      _tag: "Buffered",
      status: 200,
      headers: { "content-type": "application/json", etag: etagOf(row), "content-length": String(bytes) },
      body
    }
    if (bytes > this.maxBytes) return answer
    this.kept.set(row, { answer, bytes })
    this.bytes += bytes
    for (const [oldest, { bytes }] of this.kept) {
      if (this.bytes <= this.maxBytes) break
      this.kept.delete(oldest)
      this.bytes -= bytes
    }
    return answer
  }

  get size() {
    return this.kept.size
  }
}
