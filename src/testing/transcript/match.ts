/**
 * Placeholders (`{{name}}` captures a value, `{{*}}` matches anything; rules in docs/transcripts.md) and matching
 * text and JSON against expectations written with them. Captures accumulate in `Vars`, in file order.
 */

/** Captured values by placeholder name. */
export type Vars = Map<string, unknown>

export const PLACEHOLDER = /\{\{(\*|[A-Za-z_][\w.-]*)\}\}/g
export const WHOLE_PLACEHOLDER = /^\{\{(\*|[A-Za-z_][\w.-]*)\}\}$/
const OPEN = "..."

export const textOf = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value))
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
export const hasPlaceholder = (s: string) => s.search(PLACEHOLDER) !== -1

/** `pattern` with every captured placeholder replaced by its value; unknown ones stay as written. */
export const resolveText = (pattern: string, vars: Vars) =>
  pattern.replace(PLACEHOLDER, (whole, name: string) => (vars.has(name) ? textOf(vars.get(name)) : whole))

/**
 * Matches `actual` against a text pattern with placeholders; on success new captures are added to `vars`
 * (nothing is captured on failure).
 */
export const matchText = (pattern: string, actual: string, vars: Vars): boolean => {
  const captures: Array<string> = []
  let source = "^"
  let last = 0
  for (const m of pattern.matchAll(PLACEHOLDER)) {
    source += escapeRegExp(pattern.slice(last, m.index))
    last = m.index + m[0].length
    const name = m[1]
    if (name === "*") source += "[\\s\\S]*?"
    else if (vars.has(name)) source += escapeRegExp(textOf(vars.get(name)))
    else if (captures.includes(name)) source += `\\${captures.indexOf(name) + 1}`
    else {
      captures.push(name)
      source += "([\\s\\S]+?)"
    }
  }
  const match = new RegExp(`${source}${escapeRegExp(pattern.slice(last))}$`).exec(actual)
  if (!match) return false
  captures.forEach((name, k) => vars.set(name, match[k + 1]))
  return true
}

export const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v)

const deepEqual = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, k) => deepEqual(x, b[k]))
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a)
    return keys.length === Object.keys(b).length && keys.every((k) => k in b && deepEqual(a[k], b[k]))
  }
  return false
}

/**
 * A captured value against a later occurrence: deep equality, except that a value captured from text (a header,
 * part of a string) equals a number or boolean written the same (an ETag's `"{{seq}}"`, then `"seq": "{{seq}}"`).
 */
const sameCapture = (captured: unknown, actual: unknown) =>
  deepEqual(captured, actual) ||
  (typeof captured === "string" && (typeof actual === "number" || typeof actual === "boolean") && captured === String(actual))

/** An expected JSON value with captured placeholders filled in, for messages and diffs. */
export const resolveJson = (expected: unknown, vars: Vars): unknown => {
  if (typeof expected === "string") {
    const whole = WHOLE_PLACEHOLDER.exec(expected)
    if (whole && vars.has(whole[1])) return vars.get(whole[1])
    return resolveText(expected, vars)
  }
  if (Array.isArray(expected)) return expected.map((e) => resolveJson(e, vars))
  if (isPlainObject(expected)) return Object.fromEntries(Object.entries(expected).map(([k, v]) => [k, resolveJson(v, vars)]))
  return expected
}

export const show = (value: unknown) => (value === undefined ? "nothing" : JSON.stringify(value))

export interface JsonMatch {
  /** One line per difference, each naming a JSON path. */
  readonly problems: ReadonlyArray<string>
  /** The actual value where it matched and the expectation where it did not: diffing it against the actual value shows only real differences. */
  readonly projected: unknown
}

/** Structural comparison with placeholders (rules in docs/transcripts.md). Captures go into `vars`. */
export const matchJson = (expected: unknown, actual: unknown, vars: Vars, root = "$"): JsonMatch => {
  const problems: Array<string> = []
  const walk = (exp: unknown, act: unknown, path: string): unknown => {
    if (typeof exp === "string") {
      const whole = WHOLE_PLACEHOLDER.exec(exp)
      if (whole) {
        const name = whole[1]
        if (name === "*") return act
        if (!vars.has(name)) {
          vars.set(name, act)
          return act
        }
        if (sameCapture(vars.get(name), act)) return act
        problems.push(`${path}: expected {{${name}}} = ${show(vars.get(name))}, got ${show(act)}`)
        return vars.get(name)
      }
      if (hasPlaceholder(exp)) {
        if (typeof act === "string" && matchText(exp, act, vars)) return act
        problems.push(`${path}: expected a string like ${show(resolveText(exp, vars))}, got ${show(act)}`)
        return resolveText(exp, vars)
      }
    }
    if (Array.isArray(exp)) {
      if (!Array.isArray(act)) {
        problems.push(`${path}: expected an array, got ${show(act)}`)
        return resolveJson(exp, vars)
      }
      const open = exp.length > 0 && exp[exp.length - 1] === OPEN
      const items = open ? exp.slice(0, -1) : exp
      if (open ? act.length < items.length : act.length !== items.length) {
        problems.push(`${path}: expected ${open ? "at least " : ""}${items.length} element(s), got ${act.length}`)
      }
      const projected = items.map((e, k) => (k < act.length ? walk(e, act[k], `${path}[${k}]`) : resolveJson(e, vars)))
      return open ? [...projected, ...act.slice(items.length)] : projected
    }
    if (isPlainObject(exp)) {
      if (!isPlainObject(act)) {
        problems.push(`${path}: expected an object, got ${show(act)}`)
        return resolveJson(exp, vars)
      }
      // A key may name a captured value (a view keyed by row ids): it is resolved, never captured.
      const keyed: Record<string, unknown> = Object.fromEntries(
        Object.entries(exp).map(([key, value]) => [hasPlaceholder(key) ? resolveText(key, vars) : key, value]))
      const open = OPEN in keyed
      const matched: Record<string, unknown> = {}
      for (const [key, value] of Object.entries(keyed)) {
        if (key === OPEN) continue
        if (key in act) matched[key] = walk(value, act[key], `${path}.${key}`)
        else problems.push(`${path}: missing key "${key}" (expected ${show(resolveJson(value, vars))})`)
      }
      const projected: Record<string, unknown> = {}
      for (const key of Object.keys(act)) {
        if (key in matched) projected[key] = matched[key]
        else if (open) projected[key] = act[key]
        else problems.push(`${path}: unexpected key "${key}" = ${show(act[key])}`)
      }
      for (const key of Object.keys(keyed)) if (key !== OPEN && !(key in act)) projected[key] = resolveJson(keyed[key], vars)
      return projected
    }
    if (exp === act) return act
    problems.push(`${path}: expected ${show(exp)}, got ${show(act)}`)
    return exp
  }
  const projected = walk(expected, actual, root)
  return { problems, projected }
}

/** A text's JSON value, or `ok: false` when it is not JSON. */
export const tryJson = (text: string): { ok: true; value: unknown } | { ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}
