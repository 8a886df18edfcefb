/**
 * User code isolation: every callback of an app (a method's `apply`, a view's `evolve`, a migration) runs through
 * here, inside the single writer or a startup fold. Whatever it throws is described without ever throwing again
 * (null-prototype objects, throwing getters and toString, Symbols, BigInts, revoked Proxies, huge strings), and
 * what it returns is checked and copied into plain JSON data before anything stores or serves it.
 */
import { Data, Either } from "effect"
import type { FieldIssue } from "../errors.ts"
import { FORBIDDEN_KEY, NOT_FINITE } from "../rules/input-rules.ts"

/** User code threw, or returned something that cannot be stored: why, and the stack of the throw for the log. */
export class UserCodeFailure extends Data.TaggedError("UserCodeFailure")<{ readonly reason: string; readonly trace: string }> {
  override get message() {
    return this.reason
  }
}

export const userCodeFailure = (reason: string, trace: string = reason) => new UserCodeFailure({ reason, trace })

const MAX_DESCRIPTION = 500
const MAX_TRACE = 4000
const MAX_ISSUES = 20
const MAX_DEPTH = 500

const cap = (text: string, max: number) =>
  text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters in all)`

/** Reads `f()`, or undefined when reading throws (a getter, a Proxy trap). */
const attempt = <A>(f: () => A): A | undefined => {
  try {
    return f()
  } catch {
    return undefined
  }
}

const describeUnsafe = (thrown: unknown): string => {
  switch (typeof thrown) {
    case "string":
      return thrown
    case "bigint":
      return `${thrown}n`
    case "number":
    case "boolean":
    case "undefined":
    case "symbol":
      // String() of a Symbol is its descriptive string; it calls nothing the user can override.
      return String(thrown)
    case "function": {
      const name = attempt(() => (thrown as { name?: unknown }).name)
      return typeof name === "string" && name.length > 0 ? `a function (${name})` : "a function"
    }
  }
  if (thrown === null) return "null"
  // An Error, or anything shaped like one: its message. Every read may throw (getters, Proxy traps).
  const message = attempt(() => (thrown as { message?: unknown }).message)
  if (typeof message === "string" && message.length > 0) return message
  const text = attempt(() => String(thrown))
  if (typeof text === "string" && text !== "[object Object]" && text.length > 0) return text
  const proto = attempt(() => Object.getPrototypeOf(thrown))
  if (proto === null) return "an object with no prototype, not an Error"
  const name = attempt(() => (proto as { constructor?: { name?: unknown } }).constructor?.name)
  return typeof name === "string" && name.length > 0 ? `an object (${name}) that is not an Error and has no message` : "an object that cannot be described"
}

/** What a thrown value says, in at most a few hundred characters. Never throws, whatever it is given. */
export const describeThrown = (thrown: unknown): string => {
  try {
    return cap(describeUnsafe(thrown), MAX_DESCRIPTION)
  } catch {
    return "a value that cannot be described"
  }
}

/** The stack of a thrown Error, for the log; else its description. Never throws. */
export const traceOf = (thrown: unknown): string => {
  const stack = attempt(() => (thrown instanceof Error ? thrown.stack : undefined))
  return typeof stack === "string" ? cap(stack, MAX_TRACE) : describeThrown(thrown)
}

/**
 * Whether `value` is a Promise (a thenable); if so its rejection is handled here, so that a Promise user code
 * threw or returned, and nobody awaits, cannot end the process as an unhandled rejection.
 */
export const settleThenable = (value: unknown): boolean => {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false
  const then = attempt(() => (value as { then?: unknown }).then)
  if (typeof then !== "function") return false
  attempt(() => then.call(value, undefined, () => undefined))
  return true
}

export const RETURNED_PROMISE = "it returned a Promise; it must return its result synchronously"

/** What user code threw, as `runUserCode` answers it (for callers that run it without a closure: invariants.ts). */
export const thrownByUserCode = (e: unknown): UserCodeFailure => {
  settleThenable(e)
  return userCodeFailure(describeThrown(e), traceOf(e))
}

/**
 * Runs one callback of user code: its result, or what it threw, described. A returned Promise is refused (user
 * code runs synchronously inside the writer).
 */
export const runUserCode = <A>(callback: () => A): Either.Either<A, UserCodeFailure> => {
  let result: A
  try {
    result = callback()
  } catch (e) {
    return Either.left(thrownByUserCode(e))
  }
  if (settleThenable(result)) return Either.left(userCodeFailure(RETURNED_PROMISE))
  return Either.right(result)
}

/** Issues as one line: `price: must be a finite number; tags.2: ...`, capped. */
export const issuesText = (issues: ReadonlyArray<FieldIssue>): string => {
  const shown = issues.slice(0, MAX_ISSUES).map((i) => cap(i.path.length > 0 ? `${i.path.join(".")}: ${i.message}` : i.message, MAX_DESCRIPTION))
  return shown.join("; ") + (issues.length > MAX_ISSUES ? `; and ${issues.length - MAX_ISSUES} more` : "")
}

/** Why a value is not plain JSON data, or undefined when it is. */
const kindOf = (value: object): string => {
  const proto = Object.getPrototypeOf(value)
  const name = attempt(() => (proto as { constructor?: { name?: unknown } } | null)?.constructor?.name)
  return typeof name === "string" && name.length > 0 ? `a ${name}` : "an object of a class"
}

/** Why `value` is not a plain object (an object of fields), or undefined when it is. May throw on a Proxy. */
export const notPlainObject = (value: unknown): string | undefined => {
  if (typeof value !== "object" || value === null) return `is ${value === null ? "null" : typeof value}, not an object of fields`
  if (Array.isArray(value)) return "is an array, not an object of fields"
  const proto = Object.getPrototypeOf(value)
  if (proto === Object.prototype || proto === null) return undefined
  settleThenable(value)
  return `is ${kindOf(value)}, not an object of fields`
}

/**
 * A copy of `value` that is plain JSON data, or what is wrong with it, each issue at its path: numbers are
 * finite; no BigInt, Symbol or function; no `undefined` in arrays (JSON would store null); no cycles; only
 * plain objects and arrays; nothing that throws when read. `undefined` object values are left out, as JSON
 * does. Each value is read exactly once, so a getter or Proxy cannot answer the check one thing and the
 * store another: callers store and serve the copy.
 */
export const plainData = (value: unknown): Either.Either<unknown, ReadonlyArray<FieldIssue>> => {
  const fast = attempt(() => fastCopy(value, 0))
  if (fast !== undefined && fast !== SLOW) return Either.right(fast)
  const issues: Array<FieldIssue> = []
  const path: Array<string> = []
  const ancestors = new Set<object>()
  const issue = (message: string) => {
    issues.push({ path: [...path], message })
    return undefined
  }
  const copy = (v: unknown): unknown => {
    switch (typeof v) {
      case "string":
      case "boolean":
        return v
      case "number":
        // -0 is 0 in JSON: the value held in memory is the one the log gives back.
        return Number.isFinite(v) ? (v === 0 ? 0 : v) : issue(NOT_FINITE)
      case "undefined":
        return issue("is undefined, which JSON cannot hold")
      case "bigint":
        return issue(`is a BigInt (${cap(String(v), 40)}n), which JSON cannot hold`)
      case "symbol":
        return issue("is a Symbol, which JSON cannot hold")
      case "function":
        return issue("is a function, which JSON cannot hold")
    }
    if (v === null) return null
    const o = v as object
    if (ancestors.has(o)) return issue("refers back to a value that contains it (a cycle)")
    if (path.length >= MAX_DEPTH) return issue(`is nested more than ${MAX_DEPTH} levels deep`)
    ancestors.add(o)
    try {
      if (Array.isArray(o)) {
        if (Object.getPrototypeOf(o) !== Array.prototype) return issue(`is ${kindOf(o)}, not a plain array`)
        const n = o.length
        const out: Array<unknown> = new Array(n)
        for (let i = 0; i < n && issues.length < MAX_ISSUES; i++) {
          path.push(String(i))
          const item = o[i]
          out[i] = item === undefined ? issue("is undefined, which JSON would store as null") : copy(item)
          path.pop()
        }
        return out
      }
      const proto = Object.getPrototypeOf(o)
      if (proto !== Object.prototype && proto !== null) {
        settleThenable(o)
        return issue(`is ${kindOf(o)}, not a plain object`)
      }
      const out: Record<string, unknown> = {}
      for (const key of Object.keys(o)) {
        if (issues.length >= MAX_ISSUES) break
        path.push(key)
        if (key === "__proto__") issue(FORBIDDEN_KEY)
        else {
          const item = (o as Record<string, unknown>)[key]
          if (item !== undefined) out[key] = copy(item)
        }
        path.pop()
      }
      return out
    } finally {
      ancestors.delete(o)
    }
  }
  let copied: unknown
  try {
    copied = copy(value)
  } catch (e) {
    issue(`cannot be read: ${describeThrown(e)}`)
  }
  return issues.length === 0 ? Either.right(copied) : Either.left(issues)
}

/** What `fastCopy` answers for a value it leaves to the full walk. */
const SLOW: unique symbol = Symbol("slow")
/** Nesting the fast copy follows; deeper (or a cycle), the full walk decides. */
const FAST_DEPTH = 64

/**
 * The common case, cheaply: a copy of plain objects and arrays of strings, booleans, finite numbers and null (a
 * method's change, a view's entry such as `{ loans: ["l1", "l2"] }`), with none of the full walk's bookkeeping (path,
 * ancestors, issues); SLOW for anything else (then the full walk decides and says why). Hand-tuned: the full walk
 * cost a keyed view's entry with one array 2 µs per write, this 0.2.
 */
const fastCopy = (v: unknown, depth: number): unknown => {
  switch (typeof v) {
    case "string":
    case "boolean":
      return v
    case "number":
      return Number.isFinite(v) ? (v === 0 ? 0 : v) : SLOW
    case "object":
      break
    default:
      return SLOW
  }
  if (v === null) return null
  if (depth >= FAST_DEPTH) return SLOW
  if (Array.isArray(v)) {
    if (Object.getPrototypeOf(v) !== Array.prototype) return SLOW
    const n = v.length
    const out: Array<unknown> = new Array(n)
    for (let i = 0; i < n; i++) {
      const item = v[i]
      const c = item === undefined ? SLOW : fastCopy(item, depth + 1)
      if (c === SLOW) return SLOW
      out[i] = c
    }
    return out
  }
  if (Object.getPrototypeOf(v) !== Object.prototype) return SLOW
  const out: Record<string, unknown> = {}
  for (const key in v) {
    if (!Object.prototype.hasOwnProperty.call(v, key) || key === "__proto__") return SLOW
    const item = (v as Record<string, unknown>)[key]
    const c = item === undefined ? SLOW : fastCopy(item, depth + 1)
    if (c === SLOW) return SLOW
    out[key] = c
  }
  return out
}

/** A value user code returned, as JSON text; Left: why it is not plain JSON data. */
export const plainJson = (value: unknown): Either.Either<string, ReadonlyArray<FieldIssue>> =>
  Either.flatMap(plainData(value), (copy) => {
    try {
      return Either.right(JSON.stringify(copy))
    } catch (e) {
      // Only a text past the engine's longest string gets here.
      return Either.left([{ path: [], message: `cannot be written as JSON: ${describeThrown(e)}` }])
    }
  })
