/**
 * Follows `/api/_events` over fetch rather than EventSource, because EventSource cannot send the
 * Authorization header. It resumes after the last event it saw whenever the stream ends (a restart, or the
 * server closing a reader that fell behind), so the caller sees every event once, in order.
 */
// `.js`, not `.ts` like the page's own imports: esbuild finds the source beside a checkout's src/ and the compiled
// module in an installed package's dist/, which ships no .ts outside the page (scripts/build.mjs).
import { sseParser } from "../../support/sse.js"
import type { StoredEvent } from "../wire.ts"
import { authHeaders } from "./api.ts"

export type FollowState = "live" | "reconnecting" | "unauthorized"

export interface Follower {
  readonly onEvent: (event: StoredEvent) => void
  readonly onState: (state: FollowState) => void
}

const RETRY_MS = 1000

/** The `data:` payloads of the SSE messages in `body`, as they arrive. */
async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  const parser = sseParser()
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    for (const event of parser.push(decoder.decode(value, { stream: true }))) if (event.data !== undefined) yield event.data
  }
}

export const followEvents = async (from: number, follower: Follower): Promise<void> => {
  let next = from
  for (;;) {
    try {
      const res = await fetch(`/api/_events?from=${next}`, { headers: { accept: "text/event-stream", ...authHeaders() }, cache: "no-store" })
      if (res.status === 401) return follower.onState("unauthorized")
      if (!res.ok || res.body === null) throw new Error(`HTTP ${res.status}`)
      follower.onState("live")
      for await (const data of sseData(res.body)) {
        const event = JSON.parse(data) as StoredEvent
        next = event.seq + 1
        follower.onEvent(event)
      }
    } catch {
      // A dropped connection or a restarting server: retry below.
    }
    follower.onState("reconnecting")
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS))
  }
}
