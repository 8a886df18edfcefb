/**
 * The access tokens already verified, each kept until it expires, so that a client sending the same token on every
 * request pays for its signature once.
 *
 * This is on every authenticated request's path, and the budget is that a token seen before costs no more than a
 * static token's lookup (a SHA-256 digest of the presented token and a map lookup). Digesting a whole JWT (often
 * 800 bytes and more) costs two to three times that, so an entry is found by the last characters of the token
 * (which are its signature's: unique per token, and unknown to anyone without the token) and then the whole
 * token must be equal to the one verified. A token that shares the last characters but differs anywhere else is
 * not this entry, so it is verified in full. The cache holds at most `capacity` tokens.
 */

/** How many trailing characters of a token find its entry: 144 bits of the signature. */
const KEY_CHARS = 24
/** At most one sweep of expired entries per interval, so that a full cache of live tokens does not sweep per insert. */
const SWEEP_INTERVAL_MS = 1000

interface Entry<A> {
  readonly token: string
  readonly value: A
  /** Milliseconds since the epoch after which the token is no longer accepted. */
  readonly until: number
}

export class VerifiedTokens<A> {
  private readonly entries = new Map<string, Entry<A>>()
  private sweptAt = 0

  constructor(private readonly capacity: number, private readonly now: () => number = Date.now) {}

  get size() {
    return this.entries.size
  }

  /** The value stored with `token` if it was verified and is still within its lifetime. */
  get(token: string): A | undefined {
    const key = token.slice(-KEY_CHARS)
    const entry = this.entries.get(key)
    if (entry === undefined || entry.token !== token) return undefined
    if (entry.until < this.now()) {
      this.entries.delete(key)
      return undefined
    }
    return entry.value
  }

  /** Keeps `token` until `until` (ms since the epoch); an already expired one is not kept. */
  set(token: string, value: A, until: number): void {
    const now = this.now()
    if (until < now) return
    const key = token.slice(-KEY_CHARS)
    this.entries.delete(key)
    if (this.entries.size >= this.capacity) this.makeRoom(now)
    this.entries.set(key, { token, value, until })
  }

  /** Drops the expired entries (at most once a second), then the oldest ones until one more fits. */
  private makeRoom(now: number) {
    if (now - this.sweptAt >= SWEEP_INTERVAL_MS) {
      this.sweptAt = now
      for (const [key, entry] of this.entries) if (entry.until < now) this.entries.delete(key)
    }
    for (const key of this.entries.keys()) {
      if (this.entries.size < this.capacity) break
      this.entries.delete(key)
    }
  }
}
