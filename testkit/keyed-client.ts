/**
 * A client that retries what it did not get an answer to, with the same idempotency key: what a careful client
 * does across crashes and failovers. It records every intended write by key, the first answer it got for each,
 * and every later answer that differs from the first (which must never happen).
 *
 * "No answer" is a refused or reset connection, or a 503 (nothing was acknowledged); any other status is an
 * answer, and the write is no longer pending.
 */
import { http } from "./server.ts"

export interface KeyedWrite {
  readonly key: string
  readonly method: "POST" | "PATCH" | "DELETE"
  readonly path: string
  readonly body?: unknown
}

export interface Answer {
  readonly status: number
  readonly text: string
  readonly replayed: boolean
}

export class KeyedClient {
  /** Every write meant, by key. */
  readonly intended = new Map<string, KeyedWrite>()
  /** The first answer received, by key. */
  readonly first = new Map<string, Answer>()
  /** Keys sent without an answer yet. */
  readonly pending = new Set<string>()
  /** Sends waiting for their answer right now, by base URL (a test kills a node while some are). */
  readonly inFlight = new Map<string, number>()
  /** Later answers that differ from the first one for their key. */
  readonly mismatches: Array<string> = []
  /** How many answers came flagged `Idempotent-Replayed: true`. */
  replays = 0
  /** How many sends got no answer. */
  unanswered = 0
  /** Writes sent with no answer whose retry was answered as a replay: they had landed. */
  landedUnanswered = 0

  /** Sends the write (a new one, or a retry of `w.key`); the answer, or undefined when none came. */
  async send(base: string, w: KeyedWrite): Promise<Answer | undefined> {
    this.intended.set(w.key, w)
    this.pending.add(w.key)
    let answer: Answer
    this.inFlight.set(base, (this.inFlight.get(base) ?? 0) + 1)
    try {
      const res = await http(`${base}${w.path}`, { method: w.method, body: w.body, headers: { "idempotency-key": w.key } })
      answer = { status: res.status, text: res.text, replayed: res.headers.get("idempotent-replayed") === "true" }
    } catch {
      this.unanswered++
      return undefined
    } finally {
      this.inFlight.set(base, this.inFlight.get(base)! - 1)
    }
    if (answer.status === 503) {
      this.unanswered++
      return undefined
    }
    this.pending.delete(w.key)
    if (answer.replayed) this.replays++
    const before = this.first.get(w.key)
    if (before === undefined) this.first.set(w.key, answer)
    else if (before.status !== answer.status || before.text !== answer.text) {
      this.mismatches.push(`${w.key}: first ${before.status} ${before.text}, then ${answer.status} ${answer.text}`)
    }
    return answer
  }

  /**
   * Retries the pending writes (all, or those of `only`) against `bases` in turn until they are answered or `rounds`
   * pass; the keys left.
   */
  async retryPending(bases: ReadonlyArray<string>, rounds = 50, only?: ReadonlyArray<string>): Promise<ReadonlyArray<string>> {
    const left = () => (only === undefined ? [...this.pending] : only.filter((k) => this.pending.has(k)))
    for (let round = 0; round < rounds && left().length > 0; round++) {
      const keys = left()
      const answers = await Promise.all(keys.map((key, i) => this.send(bases[(i + round) % bases.length], this.intended.get(key)!)))
      this.landedUnanswered += answers.filter((a) => a?.replayed === true).length
      if (left().length > 0) await new Promise((r) => setTimeout(r, 100))
    }
    return left()
  }

  /** Sends every answered write again: each answer must equal the first (checked by `send`) and be a replay. */
  async resendAnswered(bases: ReadonlyArray<string>, limit = Infinity): Promise<number> {
    const keys = [...this.first.keys()].slice(0, limit)
    let notReplayed = 0
    for (let i = 0; i < keys.length; i += 16) {
      const answers = await Promise.all(keys.slice(i, i + 16).map((key, j) => this.send(bases[(i + j) % bases.length], this.intended.get(key)!)))
      notReplayed += answers.filter((a) => a !== undefined && a.status < 300 && !a.replayed).length
    }
    return notReplayed
  }
}
