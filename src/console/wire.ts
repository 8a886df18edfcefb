/**
 * The JSON the console's read-only endpoints answer with. The server builds these values and the page reads
 * them; both import these types, so the two cannot drift apart.
 */
import type { StoredEvent } from "../domain/events.ts"

export type { StoredEvent }

/** `GET /api/_catalog`: the app as every surface exposes it. */
export interface CatalogView {
  readonly app: { readonly name: string; readonly description?: string }
  readonly version: string
  readonly types: ReadonlyArray<TypeView>
  /** The declared views (projections), in catalog order. */
  readonly views: ReadonlyArray<ViewInfo>
  /** The app's commands across entity types, in catalog order. */
  readonly commands: ReadonlyArray<CommandView>
}

/** An app command (a command across entity types) and where it is served. */
export interface CommandView {
  readonly name: string
  readonly description?: string
  /** Its params, read as the fields are. */
  readonly params: ReadonlyArray<FieldView>
  /** `POST /api/_commands/<name>`, or absent when REST does not serve it. */
  readonly rest?: string
  /** The MCP tool, named as the command, or absent when MCP does not expose it. */
  readonly tool?: string
}

export interface ViewInfo {
  readonly name: string
  readonly description?: string
  /** What it folds, per type: event kinds and method names. */
  readonly on: Readonly<Record<string, ReadonlyArray<string>>>
  /** `GET /api/_views/<name>`; a keyed view's `GET /api/_views/<name>/<key>` */
  readonly rest: string
  /** `wo://views/<name>`; a keyed view's `wo://views/<name>/{key}` */
  readonly resource: string
  /** `view_<name>`; a keyed view's `view_<name>, view_<name>_list` */
  readonly tool: string
  /** A keyed view: one entry per key, shown as its first entries and a lookup by key. */
  readonly keyed?: true
}

/**
 * `GET /api/_views`: every view's current value (or why it failed, or why it is not served yet: folded again in the
 * background), as `GET /api/_views/<name>` serves it.
 */
export interface ViewsSnapshot {
  readonly views: ReadonlyArray<ViewValue>
}

/**
 * An older declaration's value, served (frozen) while the current one is folded from the log: its version, the seq
 * it is exact at, the version being folded, and why that fold failed, if it did (src/projections/views/views.ts).
 */
export interface ViewStale {
  readonly version: string
  readonly exactAt: number
  readonly nextVersion: string
  readonly nextFailed?: string
}

export type ViewValue =
  | { readonly name: string; readonly seq: number; readonly value: unknown; readonly stale?: ViewStale }
  /** A keyed view, listed without its entries: they are read from `entries` (`{items, nextCursor}`). */
  | { readonly name: string; readonly keyed: true; readonly entries: string }
  | { readonly name: string; readonly keyed: true; readonly failed: string }
  | { readonly name: string; readonly keyed: true; readonly refolding: string }
  | { readonly name: string; readonly seq: number; readonly failed: string }
  | { readonly name: string; readonly seq: number; readonly refolding: string }

/** A page of a keyed view's entries, as `GET /api/_views/<name>` serves it. */
export interface EntryPage {
  readonly items: ReadonlyArray<{ readonly key: string; readonly seq: number; readonly value: unknown }>
  readonly nextCursor?: string
}

/** One entry of a keyed view, as `GET /api/_views/<name>/<key>` serves it. */
export interface EntryValue {
  readonly key: string
  readonly seq: number
  readonly value: unknown
}

export interface TypeView {
  readonly name: string
  readonly description?: string
  readonly fields: ReadonlyArray<FieldView>
  /** Every operation the type has (CRUD, then methods), with where each one is exposed. */
  readonly operations: ReadonlyArray<OperationView>
  /** The resource URI template agents read and subscribe to, when the type is on MCP at all. */
  readonly resource?: string
}

export interface FieldView {
  readonly name: string
  readonly required: boolean
  /** A compact reading of the field's JSON Schema: `string, min 1`, `"USD" | "EUR"`, `number > 0`. */
  readonly summary: string
}

export interface OperationView {
  readonly name: string
  readonly kind: "crud" | "method"
  readonly description?: string
  /** `POST /api/products/:id/set_price`, or absent when REST does not serve it. */
  readonly rest?: string
  /** The generated MCP tool's name, or absent when MCP does not expose it. */
  readonly tool?: string
}

/** `GET /api/_rows`: the first rows of every type, all read at one log position. */
export interface RowsSnapshot {
  /** The log sequence these rows include: fold events after it to stay current. */
  readonly seq: number
  readonly types: Readonly<Record<string, TypeRows>>
}

export interface TypeRows {
  readonly total: number
  /** True when there are more rows than `items` holds (the snapshot is capped). */
  readonly more: boolean
  readonly items: ReadonlyArray<Record<string, unknown> & { readonly id: string; readonly version: number }>
}

/** `GET /api/_agents`: who is connected over MCP right now. */
export interface AgentsView {
  readonly sessions: ReadonlyArray<SessionView>
  readonly listens: ReadonlyArray<ListenView>
}

export interface SessionView {
  /** The first characters only: a legacy session id is the session's credential. */
  readonly id: string
  readonly version: string
  readonly createdAt: number
  readonly lastSeen: number
  /** Whether its GET notification stream is open. */
  readonly streaming: boolean
  readonly subscriptions: ReadonlyArray<string>
}

export interface ListenView {
  /** The subscriptions/listen request's JSON-RPC id. */
  readonly id: string
  /** The log sequence at which it began listening. */
  readonly since: number
  readonly subscriptions: ReadonlyArray<string>
  readonly listChanges: boolean
}
