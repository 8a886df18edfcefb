/**
 * The recorder's placeholders for values the server generates (recorder.ts; the rules are in
 * docs/transcripts.md), so a transcript recorded on any data dir replays on the fresh one `wo test` starts:
 *
 *  - an `mcp-session-id` becomes `{{session}}`, wherever that value reappears;
 *  - a row created in the transcript (a `location` header, a command's `"kind": "created"` change, a
 *    `<type>_create` tool result) becomes `{{<type>_<id>}}`: in paths, `wo://` URIs, `id`s of its type, reference
 *    fields and params that point at its type (from the catalog), and in view values (strings and keys, when only
 *    one type has a created row with that id);
 *  - a view's `seq` and ETag become `{{seq}}`, a command's correlation `{{correlation}}`;
 *  - a timestamp in a response (an ISO date-time, or epoch milliseconds under `at`) becomes `{{*}}`.
 *
 * Requests only reuse names; responses name new values.
 */
import { safeDecode, type EdgeRequest } from "../edge/edge-types.ts"

/** Which fields hold ids of which type, from the catalog. */
export interface RecordedRefs {
  /** type -> field -> referenced type; its keys are the app's types. */
  readonly fields: ReadonlyMap<string, ReadonlyMap<string, string>>
  /** command -> param -> referenced type; its keys are the app's commands. */
  readonly params: ReadonlyMap<string, ReadonlyMap<string, string>>
}

const NO_REFS: RecordedRefs = { fields: new Map(), params: new Map() }

export const placeholder = (name: string) => `{{${name}}}`

const sessionKey = (value: string) => `session:${value}`
const rowKey = (type: string, id: string) => `row:${type}/${id}`

/** Where in the app a JSON value sits: a row of a type, a command's params or result, a view's body. */
interface Context {
  readonly type?: string
  readonly command?: string
  readonly view?: boolean
}

const YEAR_MS = 366 * 24 * 3_600_000
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v)

const parseJson = (text: string): { readonly value: unknown } | undefined => {
  try {
    return { value: JSON.parse(text) }
  } catch {
    return undefined
  }
}

/** Names the recording has given to generated values; names already in the file are never reused. */
export class RecordedValues {
  private readonly names = new Map<string, string>()
  /** Ids of rows created in the transcript, with the types that created them (a view value says no type). */
  private readonly createdIds = new Map<string, Set<string>>()
  /** Placeholders standing for numbers: inside a JSON text they are written without quotes. */
  private readonly numeric = new Set<string>()

  constructor(private readonly taken: Set<string>, private readonly refs: RecordedRefs = NO_REFS) {}

  /** The placeholder name for `key`, naming it `base` (or `base_2`, ...) the first time. */
  private name(key: string, base: string): string {
    const known = this.names.get(key)
    if (known !== undefined) return known
    let name = base
    for (let n = 2; this.taken.has(name); n++) name = `${base}_${n}`
    this.taken.add(name)
    this.names.set(key, name)
    return name
  }

  private lookup(key: string): string | undefined {
    return this.names.get(key)
  }

  session(value: string): string {
    return placeholder(this.name(sessionKey(value), "session"))
  }

  /** A row created in the transcript: its placeholder from now on. */
  created(type: string, id: string): string {
    const types = this.createdIds.get(id) ?? new Set<string>()
    types.add(type)
    this.createdIds.set(id, types)
    return placeholder(this.name(rowKey(type, id), `${type}_${id.replace(/\W/g, "_")}`))
  }

  private row(type: string | undefined, id: string): string | undefined {
    const name = type === undefined ? undefined : this.lookup(rowKey(type, id))
    return name === undefined ? undefined : placeholder(name)
  }

  /** A created row's id named without its type (in a view value): only when one type created that id. */
  private untypedRow(id: string): string | undefined {
    const types = this.createdIds.get(id)
    return types?.size === 1 ? this.row([...types][0], id) : undefined
  }

  seq(value: number): string {
    const name = this.name(`seq:${value}`, "seq")
    this.numeric.add(name)
    return placeholder(name)
  }

  /** A header or other text value that is exactly a known session, or a `wo://<type>/<id>` URI of a known row. */
  text(value: string): string {
    const name = this.lookup(sessionKey(value))
    return name === undefined ? this.uri(value) ?? value : placeholder(name)
  }

  private uri(value: string): string | undefined {
    // A keyed view's entry, keyed by a row's id (`wo://views/loans_by_member/5`).
    const entry = /^wo:\/\/views\/([^/?#]+)\/([^/?#]+)$/.exec(value)
    if (entry !== null) {
      const row = this.untypedRow(safeDecode(entry[2]))
      return row === undefined ? undefined : `wo://views/${entry[1]}/${row}`
    }
    const uri = /^wo:\/\/([^/]+)\/([^/?#]+)$/.exec(value)
    const row = uri === null ? undefined : this.row(safeDecode(uri[1]), safeDecode(uri[2]))
    return row === undefined ? undefined : `wo://${uri![1]}/${row}`
  }

  /** `/api/<type>/<id>/...` (and a keyed view's `/api/_views/<name>/<key>`) with a known row id replaced by its placeholder. */
  path(path: string): string {
    const parts = path.split("/")
    if (parts[1] !== "api" || parts.length < 4) return path
    // `/api/_views/<name>/<key>`: a keyed view's entry, keyed by a row's id.
    const at = parts[2] === "_views" ? 4 : 3
    const row = at === 4 ? (parts.length === 5 ? this.untypedRow(safeDecode(parts[4])) : undefined) : this.row(safeDecode(parts[2]), safeDecode(parts[3]))
    if (row !== undefined) parts[at] = row
    return parts.join("/")
  }

  /** A response header: a new session, the row a `location` announces, a view's ETag; else as `text`. */
  responseHeader(path: string, name: string, value: string): string {
    if (name === "mcp-session-id") return this.session(value)
    const row = name === "location" ? /^\/api\/([^/?#]+)\/([^/?#]+)$/.exec(value) : null
    if (row) return `/api/${row[1]}/${this.created(safeDecode(row[1]), safeDecode(row[2]))}`
    if (name === "etag" && path.startsWith("/api/_views/")) return this.etag(value)
    return this.text(value)
  }

  /** A view's ETag (its seq). */
  etag(value: string): string {
    const seq = /^"(\d+)"$/.exec(value)
    return seq ? `"${this.seq(Number(seq[1]))}"` : value
  }

  // -------------------------------------------------------------------------------------------------------------
  // JSON bodies

  /** Where a request's body sits in the app: by path, or for MCP by the tool or resource it names. */
  contextOf(request: EdgeRequest, rpc: unknown): Context {
    if (request.path === "/mcp") return this.rpcContext(rpc)
    const [, api, first, second] = request.path.split("/")
    if (api !== "api" || first === undefined) return {}
    if (first === "_commands") return { command: safeDecode(second ?? "") }
    if (first === "_views") return { view: true }
    return first.startsWith("_") ? {} : { type: safeDecode(first) }
  }

  private rpcContext(rpc: unknown): Context {
    const params = isRecord(rpc) && isRecord(rpc.params) ? rpc.params : undefined
    if (typeof params?.uri === "string") {
      const uri = /^wo:\/\/([^/]+)\//.exec(params.uri)
      if (uri === null) return {}
      return uri[1] === "views" ? { view: true } : { type: uri[1] }
    }
    const tool = typeof params?.name === "string" ? params.name : undefined
    if (tool === undefined) return {}
    if (this.refs.params.has(tool)) return { command: tool }
    if (tool.startsWith("view_")) return { view: true }
    const type = [...this.refs.fields.keys()].find((t) => tool.startsWith(`${t}_`))
    return type === undefined ? {} : { type }
  }

  /** Rows a response creates that no `location` header announced: a command's created changes, a create tool's row. */
  registerCreated(request: EdgeRequest, rpc: unknown, context: Context, body: unknown): void {
    const visit = (value: unknown): void => {
      if (Array.isArray(value)) return value.forEach(visit)
      if (!isRecord(value)) return
      if (value.kind === "created" && typeof value.type === "string" && typeof value.id === "string") this.created(value.type, value.id)
      Object.values(value).forEach(visit)
    }
    visit(body)
    const tool = isRecord(rpc) && isRecord(rpc.params) ? rpc.params.name : undefined
    const result = isRecord(body) && isRecord(body.result) ? body.result : undefined
    const row = result !== undefined && isRecord(result.structuredContent) ? result.structuredContent : undefined
    if (request.path === "/mcp" && context.type !== undefined && tool === `${context.type}_create` && typeof row?.id === "string" && result?.isError !== true) {
      this.created(context.type, row.id)
    }
  }

  /** A JSON value with the known generated values as placeholders; `response` also hides timestamps. */
  json(value: unknown, context: Context, response: boolean): unknown {
    const walk = (v: unknown, key: string | undefined, ctx: Context): unknown => {
      if (typeof v === "string") return this.string(v, key, ctx, response)
      if (typeof v === "number" && response && key === "at" && Math.abs(v - Date.now()) < YEAR_MS) return "{{*}}"
      if (Array.isArray(v)) return v.map((item) => walk(item, undefined, ctx))
      if (!isRecord(v)) return v
      const own: Context = typeof v.type === "string" && this.refs.fields.has(v.type) && typeof v.id === "string" ? { type: v.type } : ctx
      // A view's body, or one entry of a keyed view's page (`{key, seq, value}`).
      const viewBody = ("name" in v || (ctx.view === true && "key" in v)) && typeof v.seq === "number" && ("value" in v || "failed" in v)
      return Object.fromEntries(Object.entries(v).map(([k, item]) => {
        const name = own.view ? this.untypedRow(k) ?? k : k
        if (viewBody && k === "seq") return [name, this.seq(item as number)]
        return [name, walk(item, k, viewBody && k === "value" ? { view: true } : own)]
      }))
    }
    return walk(value, undefined, context)
  }

  private string(value: string, key: string | undefined, ctx: Context, response: boolean): string {
    const known = this.text(value)
    if (known !== value) return known
    const target = key === undefined
      ? undefined
      : key === "id"
      ? ctx.type
      : (ctx.type !== undefined ? this.refs.fields.get(ctx.type)?.get(key) : undefined) ??
        (ctx.command !== undefined ? this.refs.params.get(ctx.command)?.get(key) : undefined)
    const row = this.row(target, value) ?? (ctx.view ? this.untypedRow(value) : undefined)
    if (row !== undefined) return row
    if (!response) return value
    if (key === "correlation") return placeholder(this.name(`correlation:${value}`, "correlation"))
    if (ISO_DATE_TIME.test(value) && Math.abs(Date.parse(value) - Date.now()) < YEAR_MS) return "{{*}}"
    // A tool result's text is the JSON of its structured content: the same values, in text.
    if (key === "text") {
      const parsed = parseJson(value)
      if (parsed !== undefined && (isRecord(parsed.value) || Array.isArray(parsed.value))) {
        const text = JSON.stringify(this.json(parsed.value, ctx, response))
        // Unquoted where the value is a number; `{{*}}` matches the quotes of a string too.
        return text.replace(/"(\{\{(\*|[\w.-]+)\}\})"/g, (whole, p: string, name: string) => (name === "*" || this.numeric.has(name) ? p : whole))
      }
    }
    return value
  }
}

/** The names already used in a transcript file, so appending never reuses one. */
export const namesIn = (text: string) => new Set([...text.matchAll(/\{\{([A-Za-z_][\w.-]*)\}\}/g)].map((m) => m[1]))
