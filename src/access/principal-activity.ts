/**
 * What each principal did, for `/metrics`: its requests admitted, refused for want of a grant (403) and refused
 * over one of its limits (429), by the principal's name. Counted where each is decided (the router for every
 * surface, MCP's transport for what a request asks inside the protocol), as plain numbers read at scrape time.
 * The names are bounded: the access file declares them, and an OAuth issuer signs tokens for its registered clients only.
 */
export type PrincipalOutcome = "admitted" | "forbidden" | "limited"

export const PRINCIPAL_OUTCOMES: ReadonlyArray<PrincipalOutcome> = ["admitted", "forbidden", "limited"]

export interface PrincipalActivity {
  readonly count: (principal: string, outcome: PrincipalOutcome) => void
  /** Per principal, the totals since start. */
  readonly totals: () => ReadonlyMap<string, Readonly<Record<PrincipalOutcome, number>>>
}

export const makePrincipalActivity = (): PrincipalActivity => {
  const byName = new Map<string, Record<PrincipalOutcome, number>>()
  return {
    count: (principal, outcome) => {
      let counts = byName.get(principal)
      if (counts === undefined) byName.set(principal, counts = { admitted: 0, forbidden: 0, limited: 0 })
      counts[outcome]++
    },
    totals: () => byName
  }
}
