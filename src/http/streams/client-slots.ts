/**
 * Open streams of one kind, counted per client address and in all: the one rule behind "too many" (429) for
 * listen streams and `/api/_events` readers alike. A client spreading streams over many addresses is still
 * bounded by the total.
 */
export interface ClientSlots {
  /** True when `client` holds `perClient` slots already, or all clients hold `total`. */
  readonly full: (client: string) => boolean
  readonly take: (client: string) => void
  readonly release: (client: string) => void
}

export const makeClientSlots = (perClient: number, total: number): ClientSlots => {
  const byClient = new Map<string, number>()
  let open = 0
  const add = (client: string, delta: number) => {
    open += delta
    const n = (byClient.get(client) ?? 0) + delta
    if (n === 0) byClient.delete(client)
    else byClient.set(client, n)
  }
  return {
    full: (client) => (byClient.get(client) ?? 0) >= perClient || open >= total,
    take: (client) => add(client, 1),
    release: (client) => add(client, -1)
  }
}
