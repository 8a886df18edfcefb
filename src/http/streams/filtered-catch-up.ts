/**
 * The catch-up of an `/api/_events` reader that asked for some events only (`?actor=<name>`): the log from its start
 * up to a head, the events it accepts framed a log batch at a time and written when the socket has room. Unlike the
 * shared pages of catch-up.ts (bytes framed once for every reader), each filtered reader reads the log for itself:
 * its frames are its own, and a filter that matches little sends little.
 */
import { Chunk, Effect, Stream } from "effect"
import type { StoreError } from "../../domain/errors.ts"
import type { StoredEvent } from "../../domain/events.ts"
import type { EventLogShape } from "../../log/event-log.ts"
import { eventText, PAGE } from "./catch-up.ts"
import type { PushSink } from "./push-sink.ts"

/** The events `from..to` that `accept` takes, to `sink`; false when the stream closed meanwhile. */
export const replayFiltered = (
  log: EventLogShape,
  sink: PushSink,
  from: number,
  to: number,
  accept: (event: StoredEvent) => boolean
): Effect.Effect<boolean, StoreError> =>
  from > to
    ? Effect.succeed(true)
    : log.readFrom(from, { slice: PAGE }).pipe(
      Stream.takeWhile((event) => event.seq <= to),
      Stream.chunks,
      Stream.runForEachWhile((chunk) => {
        if (sink.isClosed()) return Effect.succeed(false)
        let text = ""
        for (const event of Chunk.toReadonlyArray(chunk)) if (accept(event)) text += eventText(event)
        return text === "" ? Effect.succeed(true) : sink.send(text)
      }),
      Effect.map(() => !sink.isClosed())
    )
