import type { Actor } from "./actor.ts"

/** The events in the log. Every change to a row is one event; the row is the fold of its events (see decider.ts). */

/** A row as it is served everywhere: the store's id and version, then the fields (encoded, JSON-shaped). */
export type Row<A = Record<string, unknown>> = { readonly id: string; readonly version: number } & A

export type EventKind = "created" | "updated" | "deleted" | "invoked"

export interface StoredEvent {
  /** Global log sequence, from 1, without gaps. SSE ids and resumption derive from it. */
  readonly seq: number
  /** Commit time, epoch milliseconds. */
  readonly at: number
  readonly type: string
  readonly id: string
  /** The row's version after this event: 1 for the create, then +1 per event. */
  readonly version: number
  /** The schema version of the type this event was written with (absent: 1). */
  readonly schema?: number
  readonly kind: EventKind
  /** For "invoked": the method's name and its decoded params. */
  readonly method?: string
  readonly params?: Record<string, unknown>
  /** created: all fields; updated and invoked: the changed fields; deleted: {}. Always encoded (JSON) form. */
  readonly data: Record<string, unknown>
  /** Written by an app command (a command across entity types): its name. Absent for a single-row write. */
  readonly command?: string
  /** With `command`: one id per execution of the command, on each of its events, so a reader can regroup them. */
  readonly correlation?: string
  /** Who made it (actor.ts); absent on events written before actors were recorded. */
  readonly actor?: Actor
}

/** What a committed event did to its row; the registry routes these by URI. */
export interface Change {
  readonly event: StoredEvent
  readonly uri: string
  /** The row after the event, or null when it was deleted. */
  readonly row: Row | null
  /** The row before the event, or null when it did not exist (the writer always sets it; absent: unknown). */
  readonly before?: Row | null
}

export const streamKey = (type: string, id: string) => `${type}/${id}`
