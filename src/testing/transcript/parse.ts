/**
 * Reading a transcript file (`*.http`, format in docs/transcripts.md) into its exchanges. A malformed file throws
 * a TranscriptSyntaxError naming the line.
 */

export interface TranscriptRequest {
  readonly method: string
  readonly target: string
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body: string
}

export interface ReadLimit {
  readonly events?: number
  readonly ms?: number
}

export interface ExpectedResponse {
  readonly status: number
  readonly read?: ReadLimit
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body: string
}

export interface Exchange {
  readonly title: string
  /** 1-based line of the `###` line, for messages. */
  readonly line: number
  readonly request: TranscriptRequest
  readonly expect: ExpectedResponse
}

export interface Transcript {
  readonly meta: Readonly<Record<string, string>>
  readonly app: string | undefined
  /** One entry per run; `[{}]` when there is no `# env:`. */
  readonly envs: ReadonlyArray<Readonly<Record<string, string>>>
  readonly exchanges: ReadonlyArray<Exchange>
}

export class TranscriptSyntaxError extends Error {
  constructor(readonly line: number, message: string) {
    super(`line ${line}: ${message}`)
  }
}

const HEADER_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*)$/
const REQUEST_LINE = /^([A-Z]+)\s+(\S+)(?:\s+HTTP\/\d(?:\.\d)?)?$/
const STATUS_LINE = /^-->\s*(\d{3})\b/
const READ_LINE = /^#\s*read:\s*(.+)$/
const META_LINE = /^#\s*([\w-]+)\s*:\s*(.*)$/

const isExchangeStart = (line: string) => line.startsWith("###")

const trimBlankLines = (lines: ReadonlyArray<string>) => {
  let start = 0
  let end = lines.length
  while (start < end && lines[start].trim() === "") start++
  while (end > start && lines[end - 1].trim() === "") end--
  return lines.slice(start, end).join("\n")
}

const parseEnvs = (value: string | undefined): Transcript["envs"] => {
  if (value === undefined || value.trim() === "") return [{}]
  return value.split("|").map((run) =>
    Object.fromEntries(run.trim().split(/\s+/).filter((p) => p !== "").map((pair) => {
      const eq = pair.indexOf("=")
      if (eq <= 0) throw new TranscriptSyntaxError(1, `# env: expected NAME=value, got "${pair}"`)
      return [pair.slice(0, eq), pair.slice(eq + 1)]
    })))
}

const parseReadLimit = (text: string, line: number): ReadLimit => {
  let limit: { events?: number; ms?: number } = {}
  for (const part of text.split(",").map((p) => p.trim())) {
    const m = /^(\d+)\s*(events?|ms)$/.exec(part)
    if (!m) throw new TranscriptSyntaxError(line, `# read: expected "N events" or "N ms", got "${part}"`)
    limit = m[2] === "ms" ? { ...limit, ms: Number(m[1]) } : { ...limit, events: Number(m[1]) }
  }
  return limit
}

/** Parses a transcript; a malformed file throws a TranscriptSyntaxError naming the line. */
export const parseTranscript = (text: string): Transcript => {
  const lines = text.replace(/\r\n/g, "\n").split("\n")
  let i = 0
  const meta: Record<string, string> = {}
  for (; i < lines.length && !isExchangeStart(lines[i]); i++) {
    const line = lines[i].trim()
    if (line === "") continue
    if (!line.startsWith("#")) throw new TranscriptSyntaxError(i + 1, "before the first ### exchange only # lines are allowed")
    const m = META_LINE.exec(line)
    if (m) meta[m[1].toLowerCase()] = m[2].trim()
  }

  const exchanges: Array<Exchange> = []
  while (i < lines.length) {
    const start = i
    const title = lines[i++].slice(3).trim()
    while (i < lines.length && lines[i].trim() === "") i++
    const requestLine = REQUEST_LINE.exec(lines[i]?.trim() ?? "")
    if (!requestLine) throw new TranscriptSyntaxError(i + 1, `expected a request line such as "GET /api/articles", got "${lines[i] ?? ""}"`)
    i++

    const requestHeaders: Array<readonly [string, string]> = []
    for (; i < lines.length && lines[i].trim() !== "" && !STATUS_LINE.test(lines[i]); i++) {
      const h = HEADER_LINE.exec(lines[i])
      if (!h) throw new TranscriptSyntaxError(i + 1, `expected a request header "name: value" (a body needs a blank line before it), got "${lines[i]}"`)
      requestHeaders.push([h[1], h[2].trim()])
    }
    const bodyStart = i
    for (; i < lines.length && !STATUS_LINE.test(lines[i]); i++) {
      if (isExchangeStart(lines[i])) break
    }
    if (i >= lines.length || !STATUS_LINE.test(lines[i])) {
      throw new TranscriptSyntaxError(start + 1, `exchange "${title}" has no "--> <status>" line`)
    }
    const requestBody = trimBlankLines(lines.slice(bodyStart, i))
    const status = Number(STATUS_LINE.exec(lines[i])![1])
    i++

    let read: ReadLimit | undefined
    for (; i < lines.length && lines[i].startsWith("#") && !isExchangeStart(lines[i]); i++) {
      const r = READ_LINE.exec(lines[i].trim())
      if (!r) throw new TranscriptSyntaxError(i + 1, `unknown directive "${lines[i]}" (only "# read: ..." may follow the status)`)
      read = { ...read, ...parseReadLimit(r[1], i + 1) }
    }

    const expectedHeaders: Array<readonly [string, string]> = []
    for (; i < lines.length && lines[i].trim() !== "" && !isExchangeStart(lines[i]); i++) {
      const h = HEADER_LINE.exec(lines[i])
      if (!h) throw new TranscriptSyntaxError(i + 1, `expected a response header "name: value" (a body needs a blank line before it), got "${lines[i]}"`)
      expectedHeaders.push([h[1], h[2].trim()])
    }
    const expectedBodyStart = i
    while (i < lines.length && !isExchangeStart(lines[i])) i++

    exchanges.push({
      title,
      line: start + 1,
      request: { method: requestLine[1], target: requestLine[2], headers: requestHeaders, body: requestBody },
      expect: { status, read, headers: expectedHeaders, body: trimBlankLines(lines.slice(expectedBodyStart, i)) }
    })
  }
  return { meta, app: meta.app, envs: parseEnvs(meta.env), exchanges }
}
