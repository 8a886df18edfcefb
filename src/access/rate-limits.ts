/**
 * Per-principal limits from the access file (`"limits": {"writesPerSecond": 50, "streams": 20}`): a token bucket
 * for writes (REST 429 with Retry-After; MCP a JSON-RPC error naming the limit, code 429), and a cap on the
 * principal's open streams. The bucket lives on the principal object, which a reload keeps while the principal's
 * line is unchanged (access.ts), so editing another principal does not refill it.
 */

/** A token bucket: `rate` tokens a second, at most a second's worth saved up (and at least one). */
export class TokenBucket {
  private readonly burst: number
  private tokens: number
  private at: number
  constructor(readonly rate: number, now: number = performance.now()) {
    this.burst = Math.max(1, rate)
    this.tokens = this.burst
    this.at = now
  }
  /** Takes one token: 0 when there was one, else the seconds until there is one (for Retry-After). */
  take(now: number = performance.now()): number {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.rate)
    this.at = now
    if (this.tokens >= 1) {
      this.tokens -= 1
      return 0
    }
    return (1 - this.tokens) / this.rate
  }
}

export interface PrincipalLimits {
  /** Writes (row writes, methods, app commands) a second, on every surface together. */
  readonly writes?: TokenBucket
  /** Open streams at once (legacy GET streams, listens, event tails). */
  readonly streams?: number
}

/** A limit reached: which, and when a retry can pass (whole seconds, at least 1). */
export interface LimitReached {
  readonly limit: "writesPerSecond" | "streams"
  readonly value: number
  readonly retryAfter: number
}

/** A write by a principal with `limits`: undefined when it may go, else the limit it reached. */
export const takeWrite = (limits: PrincipalLimits | undefined): LimitReached | undefined => {
  const bucket = limits?.writes
  if (bucket === undefined) return undefined
  const wait = bucket.take()
  return wait === 0 ? undefined : { limit: "writesPerSecond", value: bucket.rate, retryAfter: Math.max(1, Math.ceil(wait)) }
}

/** One more stream for a principal with `limits` and `open` streams now: undefined when it may open it. */
export const streamRefused = (limits: PrincipalLimits | undefined, open: number): LimitReached | undefined =>
  limits?.streams === undefined || open < limits.streams ? undefined : { limit: "streams", value: limits.streams, retryAfter: 1 }

export const describeLimit = (reached: LimitReached) =>
  `this principal's limit ${reached.limit}=${reached.value} is reached; retry after ${reached.retryAfter} s`
