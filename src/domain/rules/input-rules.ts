/**
 * Rules every command input must pass before its Schema decode, whatever surface it came from (REST or MCP):
 *  - numbers are finite: `JSON.parse` turns `1e400` into Infinity, Schema.Number accepts it, and the log's
 *    JSON would then store null, so the row would differ from what was acknowledged;
 *  - no `__proto__` or `constructor` keys at any depth: they are never data, and copies of the input
 *    (spreads, Schema's Record decode) would drop or misread them.
 * It runs per command, so it is one pass over the parsed JSON that copies nothing and builds issues only when
 * found, at most MAX_ISSUES of them (the rest are counted: errors.ts).
 */
import { IssueCollector, type FieldIssues } from "../errors.ts"

export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor"])

export const NOT_FINITE = "must be a finite number"
export const FORBIDDEN_KEY = "is a reserved key, not allowed in input"

/** The issues of a decoded JSON input, each with the path of the offending value or key; empty when it passes. */
export const inputIssues = (input: unknown): FieldIssues => {
  // The usual input breaks no rule: checked first without building a path or a collector.
  if (passes(input)) return NO_ISSUES
  const issues = new IssueCollector()
  walk(input, [], issues)
  return issues.issues
}

const NO_ISSUES: FieldIssues = Object.freeze([])

/** True when nothing in `value` breaks a rule (`walk` finds no issue). */
const passes = (value: unknown): boolean => {
  if (typeof value === "number") return Number.isFinite(value)
  if (typeof value !== "object" || value === null) return true
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!passes(value[i])) return false
    return true
  }
  // Object.keys' keys (own, enumerable, strings), without building their list.
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue
    if (FORBIDDEN_KEYS.has(key) || !passes((value as Record<string, unknown>)[key])) return false
  }
  return true
}

const walk = (value: unknown, path: Array<string | number>, issues: IssueCollector): void => {
  if (typeof value === "number") {
    if (!Number.isFinite(value)) issues.add(path, NOT_FINITE)
    return
  }
  if (typeof value !== "object" || value === null) return
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      path.push(i)
      walk(value[i], path, issues)
      path.pop()
    }
    return
  }
  // Object.keys sees an own `__proto__` (JSON.parse makes one) and never the prototype's members.
  for (const key of Object.keys(value)) {
    path.push(key)
    if (FORBIDDEN_KEYS.has(key)) issues.add(path, FORBIDDEN_KEY)
    else walk((value as Record<string, unknown>)[key], path, issues)
    path.pop()
  }
}
