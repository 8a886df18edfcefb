/**
 * Server-Sent Events: what an event is, its bytes, and an incremental parser. The one codec of the server, the
 * recorder and transcripts, the console page, the test kit and the bench, so all of them agree on what an event
 * is. A leaf module (it imports nothing), because the console page bundles it too.
 *
 * Parsing follows the EventSource rules: CRLF, CR and LF each end a line; a blank line ends an event; `data:` lines
 * join with "\n"; one space after the colon is dropped; unknown fields are ignored. It keeps what an EventSource
 * hides, for the tools that show the wire: every field as its text (`retry` too, valid or not) and comment events.
 */

/** One server-sent event. Every field is its text on the wire. */
export interface SseEvent {
  readonly id?: string
  readonly event?: string
  /** The reconnection delay in milliseconds, as written. */
  readonly retry?: string
  /** The data lines joined with "\n"; absent when the event has none (a comment event). */
  readonly data?: string
  /**
   * Set on a comment event, a block of comment lines only (`: heartbeat`): the lines after the colon (one space
   * dropped), joined with "\n". Comments beside fields are dropped, as an EventSource drops them.
   */
  readonly comment?: string
}

export const SSE_HEADERS = { "content-type": "text/event-stream" } as const

export const isEventStream = (contentType: string | undefined) => contentType !== undefined && /^text\/event-stream\b/i.test(contentType)

const LINE_BREAK = /\r\n|\r|\n/
/** Two plain searches: cheaper than a regex on the per-message path. */
const hasLineBreak = (text: string) => text.includes("\n") || text.includes("\r")

/** `name: line` for each line of `text`; a line break inside a field would end it early. */
const fieldLines = (name: string, text: string) =>
  text
    .split(LINE_BREAK)
    .map((line) => `${name}: ${line}\n`)
    .join("")

/**
 * The bytes of one event, blank line included. Single-line data, which is what the server sends (JSON has no raw
 * line breaks), costs one test and no more strings than the fields themselves: this runs once per streamed message.
 */
export const sseFrame = ({ comment, id, event, retry, data }: SseEvent): string =>
  `${comment !== undefined ? fieldLines("", comment) : ""}${id !== undefined ? `id: ${id}\n` : ""}${event !== undefined ? `event: ${event}\n` : ""}${
    retry !== undefined ? `retry: ${retry}\n` : ""
  }${data === undefined ? "" : hasLineBreak(data) ? fieldLines("data", data) : `data: ${data}\n`}\n`

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/**
 * The event in `text` from `from` to `to`: a block of lines, LF only, without its blank line. Undefined when it
 * holds nothing an event has. Read in place, without splitting or spreads: this runs once per event a client reads.
 */
const eventOf = (text: string, from: number, to: number): SseEvent | undefined => {
  const fields: Mutable<SseEvent> = {}
  let hasFields = false
  let comment: string | undefined
  for (let line = from; line < to; ) {
    let end = text.indexOf("\n", line)
    if (end === -1 || end > to) end = to
    let colon = text.indexOf(":", line)
    if (colon === -1 || colon > end) colon = end
    const value = colon === end ? "" : text.slice(text.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1, end)
    const name = text.slice(line, colon)
    line = end + 1
    if (name === "") {
      if (colon !== end) comment = comment === undefined ? value : `${comment}\n${value}`
      continue
    }
    if (name === "data") fields.data = fields.data === undefined ? value : `${fields.data}\n${value}`
    else if (name === "id" || name === "event" || name === "retry") fields[name] = value
    else continue
    hasFields = true
  }
  if (hasFields) return fields
  return comment === undefined ? undefined : { comment }
}

export interface SseParser {
  /** Takes the next chunk of the stream, cut anywhere; returns the events it completed, in order. */
  readonly push: (chunk: string) => Array<SseEvent>
  /** The unterminated tail: the start of the next event (line breaks as LF). */
  readonly rest: () => string
}

/** An incremental parser: chunks in, events out. */
export const sseParser = (): SseParser => {
  /** Unparsed text, line breaks already LF. */
  let buffer = ""
  /** The last chunk ended in a CR, a line break already: an LF opening the next one is its second half. */
  let skipLf = false
  return {
    push: (chunk) => {
      const text = skipLf && chunk.startsWith("\n") ? chunk.slice(1) : chunk
      if (chunk !== "") skipLf = text.endsWith("\r")
      // The buffer holds no blank line yet: look from its last character on.
      const from = Math.max(0, buffer.length - 1)
      buffer += text.includes("\r") ? text.replace(/\r\n?/g, "\n") : text
      const events: Array<SseEvent> = []
      let start = 0
      for (let end = buffer.indexOf("\n\n", from); end !== -1; end = buffer.indexOf("\n\n", start)) {
        const event = eventOf(buffer, start, end)
        if (event !== undefined) events.push(event)
        start = end + 2
      }
      buffer = buffer.slice(start)
      return events
    },
    rest: () => buffer
  }
}

/** The complete events of a text (an unterminated last one is left out: the stream may not have ended). */
export const parseSse = (text: string): Array<SseEvent> => sseParser().push(text)
