/**
 * The page's own projection: the rows snapshot, then every later event folded in, exactly as a projection
 * outside the server would use `/api/_events`. Pure state, no DOM.
 */
import type { RowsSnapshot, StoredEvent } from "../wire.ts"

export type Row = Readonly<Record<string, unknown> & { id: string; version: number }>

export interface TypeState {
  readonly rows: Map<string, Row>
  total: number
  /** The snapshot held only the first rows: new rows past them are counted, not shown. */
  readonly capped: boolean
}

export interface Applied {
  readonly before?: Row
  /** The row after the event; absent for a delete, or when the row is outside what the page holds. */
  readonly after?: Row
}

export class Projection {
  private readonly types = new Map<string, TypeState>()
  private seq: number

  constructor(snapshot: RowsSnapshot) {
    this.seq = snapshot.seq
    for (const [name, t] of Object.entries(snapshot.types)) {
      this.types.set(name, { rows: new Map(t.items.map((r) => [r.id, r])), total: t.total, capped: t.more })
    }
  }

  /** The log position the rows include. */
  get at(): number {
    return this.seq
  }

  type(name: string): TypeState | undefined {
    return this.types.get(name)
  }

  /** Folds one event in; events at or before the snapshot are already included and change nothing. */
  apply(event: StoredEvent): Applied | undefined {
    if (event.seq <= this.seq) return undefined
    this.seq = event.seq
    const state = this.types.get(event.type)
    if (state === undefined) return undefined
    const before = state.rows.get(event.id)
    switch (event.kind) {
      case "created": {
        state.total++
        if (state.capped) return {}
        const after: Row = { id: event.id, version: event.version, ...event.data }
        state.rows.set(event.id, after)
        return { after }
      }
      case "deleted":
        state.total--
        state.rows.delete(event.id)
        return { before }
      default: {
        if (before === undefined) return {}
        const after: Row = { ...before, ...event.data, id: event.id, version: event.version }
        state.rows.set(event.id, after)
        return { before, after }
      }
    }
  }
}
