/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4), for tests of `GET /metrics`.
 * It throws on anything a scraper would reject or misread: a malformed line, name, label or value; a sample
 * without a `# TYPE` before it, or of another family; a family declared twice; duplicate series; a histogram
 * whose buckets are not cumulative or whose `+Inf` bucket differs from its `_count`.
 */

export type MetricType = "counter" | "gauge" | "histogram" | "summary" | "untyped"

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export interface Exposition {
  readonly types: ReadonlyMap<string, MetricType>
  readonly help: ReadonlyMap<string, string>
  readonly samples: ReadonlyArray<Sample>
  /** The value of the series `name` with exactly these labels; undefined when absent. */
  readonly value: (name: string, labels?: Record<string, string>) => number | undefined
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const TYPES: ReadonlySet<string> = new Set(["counter", "gauge", "histogram", "summary", "untyped"])

const seriesKey = (name: string, labels: Readonly<Record<string, string>>) =>
  `${name}{${Object.keys(labels).sort().map((k) => `${k}=${JSON.stringify(labels[k])}`).join(",")}}`

const parseValue = (text: string, line: number): number => {
  if (text === "+Inf") return Infinity
  if (text === "-Inf") return -Infinity
  if (text === "NaN") return NaN
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`line ${line}: bad value ${JSON.stringify(text)}`)
  return Number(text)
}

/** Parses `{a="x",b="y\"z"}` starting at `i` (the `{`); returns the labels and the index after the `}`. */
const parseLabels = (s: string, i: number, line: number): { labels: Record<string, string>; end: number } => {
  const labels: Record<string, string> = {}
  i++
  for (;;) {
    if (s[i] === "}") return { labels, end: i + 1 }
    const eq = s.indexOf("=", i)
    if (eq < 0) throw new Error(`line ${line}: label without "="`)
    const name = s.slice(i, eq)
    if (!LABEL_NAME.test(name)) throw new Error(`line ${line}: bad label name ${JSON.stringify(name)}`)
    if (name in labels) throw new Error(`line ${line}: label ${name} twice`)
    if (s[eq + 1] !== '"') throw new Error(`line ${line}: label value not quoted`)
    let value = ""
    let j = eq + 2
    for (;; j++) {
      const c = s[j]
      if (c === undefined) throw new Error(`line ${line}: unterminated label value`)
      if (c === '"') break
      if (c === "\\") {
        const next = s[++j]
        if (next === "n") value += "\n"
        else if (next === "\\" || next === '"') value += next
        else throw new Error(`line ${line}: bad escape \\${next}`)
      } else value += c
    }
    labels[name] = value
    i = j + 1
    if (s[i] === ",") i++
    else if (s[i] !== "}") throw new Error(`line ${line}: expected "," or "}" after a label`)
  }
}

/** The family a sample belongs to: `x_bucket`, `x_sum`, `x_count` of a histogram x, and so on. */
const familyOf = (name: string, types: ReadonlyMap<string, MetricType>) => {
  if (types.has(name)) return name
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    if (!name.endsWith(suffix)) continue
    const base = name.slice(0, -suffix.length)
    const type = types.get(base)
    if (type === "histogram" || (type === "summary" && suffix !== "_bucket")) return base
  }
  return undefined
}

export const parsePrometheusText = (text: string): Exposition => {
  if (text.length > 0 && !text.endsWith("\n")) throw new Error("the exposition does not end with a newline")
  const types = new Map<string, MetricType>()
  const help = new Map<string, string>()
  const samples: Array<Sample> = []
  const seen = new Map<string, number>()
  let current: string | undefined
  const lines = text.split("\n")
  lines.pop()
  lines.forEach((raw, index) => {
    const line = index + 1
    if (raw.trim() === "") return
    if (raw.startsWith("#")) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(raw)
      if (m === null) return // a plain comment
      const [, kind, name, rest] = m
      if (!NAME.test(name)) throw new Error(`line ${line}: bad metric name ${JSON.stringify(name)}`)
      if (kind === "TYPE") {
        if (!TYPES.has(rest)) throw new Error(`line ${line}: unknown type ${JSON.stringify(rest)}`)
        if (types.has(name)) throw new Error(`line ${line}: TYPE of ${name} given twice`)
        types.set(name, rest as MetricType)
        current = name
      } else {
        if (help.has(name)) throw new Error(`line ${line}: HELP of ${name} given twice`)
        help.set(name, rest)
      }
      return
    }
    const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(raw)
    if (nameMatch === null) throw new Error(`line ${line}: no metric name in ${JSON.stringify(raw)}`)
    const name = nameMatch[0]
    let i = name.length
    let labels: Record<string, string> = {}
    if (raw[i] === "{") ({ labels, end: i } = parseLabels(raw, i, line))
    if (raw[i] !== " ") throw new Error(`line ${line}: expected a space before the value`)
    const fields = raw.slice(i + 1).split(" ")
    if (fields.length < 1 || fields.length > 2 || fields[0] === "") throw new Error(`line ${line}: expected a value and an optional timestamp`)
    if (fields.length === 2 && !/^-?\d+$/.test(fields[1])) throw new Error(`line ${line}: bad timestamp`)
    const family = familyOf(name, types)
    if (family === undefined) throw new Error(`line ${line}: sample ${name} has no # TYPE`)
    if (family !== current) throw new Error(`line ${line}: sample ${name} is not in the family declared last (${current})`)
    const key = seriesKey(name, labels)
    if (seen.has(key)) throw new Error(`line ${line}: series ${key} given twice`)
    const value = parseValue(fields[0], line)
    seen.set(key, value)
    samples.push({ name, labels, value })
  })
  // Histograms: buckets cumulative per series, `+Inf` equal to `_count`.
  for (const [family, type] of types) {
    if (type !== "histogram") continue
    const groups = new Map<string, Array<{ le: number; value: number }>>()
    for (const s of samples) {
      if (s.name !== `${family}_bucket`) continue
      const { le, ...rest } = s.labels
      if (le === undefined) throw new Error(`${family}_bucket without le`)
      const k = seriesKey(family, rest)
      groups.set(k, [...(groups.get(k) ?? []), { le: parseValue(le, 0), value: s.value }])
    }
    for (const [k, buckets] of groups) {
      buckets.sort((a, b) => a.le - b.le)
      for (let b = 1; b < buckets.length; b++) {
        if (buckets[b].value < buckets[b - 1].value) throw new Error(`${k}: buckets are not cumulative`)
      }
      const inf = buckets[buckets.length - 1]
      if (inf.le !== Infinity) throw new Error(`${k}: no +Inf bucket`)
      const count = seen.get(k.replace(`${family}{`, `${family}_count{`))
      if (count !== inf.value) throw new Error(`${k}: +Inf bucket ${inf.value} differs from _count ${count}`)
    }
  }
  return { types, help, samples, value: (name, labels = {}) => seen.get(seriesKey(name, labels)) }
}
