/**
 * The exchange recorder behind `WO_RECORD` (`wo run --record`): it wraps the edge handler and appends every
 * exchange to a transcript file in the format `wo test` replays (docs/transcripts.md). A bug seen with a real
 * client thereby becomes a regression test: move the file into the app's transcripts/ (this project's:
 * test/transcripts/), trim it, give the exchanges titles.
 *
 * Each exchange is written as transcript text (recorded-exchange.ts). Values the server generates are written as
 * placeholders so the replay captures them instead of pinning them (recorded-values.ts): sessions, ids of rows
 * created in the transcript, view seqs and ETags, correlations, timestamps. Anything else stays literal.
 *
 * Exchanges are written when they complete (a stream when it ends or its client goes away), so concurrent
 * exchanges appear in completion order. This is a debug feature: one synchronous append per exchange.
 */
import { Effect, Stream } from "effect"
import * as fs from "node:fs"
import type { EdgeHandler } from "../edge/edge.ts"
import type { EdgeRequest, EdgeResponse, Headers } from "../edge/edge-types.ts"
import type { PushSink } from "../streams/push-sink.ts"
import { formatExchange } from "./recorded-exchange.ts"
import { namesIn, RecordedValues, type RecordedRefs } from "./recorded-values.ts"
import { parseSse } from "../../support/sse.ts"

export interface RecorderOptions {
  /** The app name for the `# app:` line a replay needs. */
  readonly app?: string
  /** The catalog's reference fields and params, so ids of created rows are found where they are referenced. */
  readonly refs?: RecordedRefs
}

const readIfExists = (file: string) => {
  try {
    return fs.readFileSync(file, "utf8")
  } catch {
    return ""
  }
}

/**
 * A wrapper that records every exchange of an edge handler into `file` (appending; a new or empty file first gets
 * the `# app:` line). A failed write is logged and never fails the request.
 */
export const recordTo = (file: string, options: RecorderOptions = {}) => {
  const existing = readIfExists(file)
  const values = new RecordedValues(namesIn(existing), options.refs)
  let preamble = existing.trim() === ""
    ? `# app: ${options.app ?? "(set the app name)"}\n# recorded by writeonce (wo run --record, or WO_RECORD); replayed by wo test (docs/transcripts.md)\n\n`
    : ""

  const append = (render: () => string) =>
    Effect.try(() => {
      // Rendering inside the append keeps request-then-response naming order per exchange.
      fs.appendFileSync(file, preamble + render())
      preamble = ""
    }).pipe(Effect.catchAll((e) => Effect.logWarning(`cannot record the exchange to ${file}`, e.error)))

  const record = (request: EdgeRequest, status: number, headers: Headers, body: string, unfinishedEvents?: number) =>
    append(() => formatExchange(values, request, status, headers, body, unfinishedEvents))

  /** The stream, teed: its chunks are kept and the exchange written once it ends or is interrupted. */
  const tee = (request: EdgeRequest, response: Extract<EdgeResponse, { _tag: "Stream" }>): EdgeResponse => {
    const chunks: Array<string> = []
    let ended = false
    const events = response.events.pipe(
      Stream.tap((chunk) => Effect.sync(() => chunks.push(chunk))),
      Stream.onEnd(Effect.sync(() => (ended = true))),
      Stream.ensuring(Effect.suspend(() => {
        const text = chunks.join("")
        const unfinished = ended ? undefined : parseSse(text).length
        return record(request, response.status, response.headers, text, unfinished)
      }))
    )
    return { ...response, events }
  }

  /** A push stream, teed: what the sink accepts is kept, and the exchange written when its scope closes. */
  const teePush = (request: EdgeRequest, response: Extract<EdgeResponse, { _tag: "Push" }>): EdgeResponse => ({
    ...response,
    start: (sink) => {
      const chunks: Array<string> = []
      let byClient = false
      // Every member named: the sink's methods live on its class (push-sink.ts), a spread would not copy them.
      const teed: PushSink = {
        isClosed: () => sink.isClosed(),
        farewell: (lastWords) => sink.farewell(lastWords),
        closed: sink.closed,
        whenClosed: (f) => sink.whenClosed(f),
        backlog: () => sink.backlog(),
        flush: () => sink.flush(),
        beat: (since) => sink.beat(since),
        enqueue: (...parts) => {
          const ok = sink.enqueue(...parts)
          if (ok) chunks.push(Buffer.concat(parts).toString("utf8"))
          return ok
        },
        send: (frame) => Effect.tap(sink.send(frame), (ok) => void (ok && chunks.push(frame.toString()))),
        sendThen: (frame, then) =>
          sink.sendThen(frame, (open) => {
            if (open) chunks.push(frame.toString())
            then(open)
          }),
        close: (reason, last) => {
          if (!sink.isClosed() && last !== undefined) chunks.push(last)
          if (!sink.isClosed()) byClient = reason === "client"
          sink.close(reason, last)
        }
      }
      const finish = Effect.suspend(() => {
        const text = chunks.join("")
        return record(request, response.status, response.headers, text, byClient || !sink.isClosed() ? parseSse(text).length : undefined)
      })
      return Effect.zipRight(Effect.addFinalizer(() => finish), response.start(teed))
    }
  })

  return <R>(handler: EdgeHandler<R>): EdgeHandler<R> => (request) =>
    handler(request).pipe(
      Effect.map((response) => (response._tag === "Stream" ? tee(request, response) : response._tag === "Push" ? teePush(request, response) : response)),
      Effect.tap((response) =>
        response._tag === "Buffered" ? record(request, response.status, response.headers, response.body ?? "") : Effect.void)
    )
}
