/**
 * How a type's fields travel between the wire, the log and the typed values methods see. The wire and the
 * log carry the encoded (JSON) form; decoding checks it and applies defaults, encoding turns typed values
 * back. Patches go field by field, each through its own one-field Struct, so every property signature
 * (optional, optionalWith default or nullable, NullOr) works in a patch as it does in a create.
 */
import { Either, ParseResult, Schema, SchemaAST } from "effect"
import { boundIssues, IssueCollector, MAX_ISSUES, type FieldIssue, type FieldIssues } from "./errors.ts"
import { fastDecoder } from "./fast-decode.ts"

export type Fields = Record<string, unknown>
/** Left: at most MAX_ISSUES issues, with the count of the others (errors.ts). */
export type Decoded = Either.Either<Fields, FieldIssues>

export const strict = { errors: "all", onExcessProperty: "error" } as const
/** Stored rows keep the fields of older schemas; those are dropped, not refused (the log keeps them). */
const lenient = { errors: "all" } as const

/** Entity fields carry no context requirements (they are plain data); this is the erased struct type. */
export type DataSchema = Schema.Schema<Fields, Fields, never>
export const asData = (s: Schema.Schema.Any) => s as unknown as DataSchema

/**
 * The error's tree cut to its first `keep` failures (leaves: a wrong type, a missing or unexpected key, a
 * refused refinement), and how many it had beyond them. Formatting 800,000 failures took seconds and tens of
 * megabytes; counting them is one walk.
 */
const pruned = (issue: ParseResult.ParseIssue, keep: number): { readonly issue?: ParseResult.ParseIssue; readonly kept: number; readonly omitted: number } => {
  switch (issue._tag) {
    case "Pointer":
    case "Refinement":
    case "Transformation": {
      const inner = pruned(issue.issue, keep)
      if (inner.issue === undefined) return inner
      const copy = issue._tag === "Pointer"
        ? new ParseResult.Pointer(issue.path, issue.actual, inner.issue)
        : issue._tag === "Refinement"
        ? new ParseResult.Refinement(issue.ast, issue.actual, issue.kind, inner.issue)
        : new ParseResult.Transformation(issue.ast, issue.actual, issue.kind, inner.issue)
      return { issue: copy, kept: inner.kept, omitted: inner.omitted }
    }
    case "Composite": {
      const list: ReadonlyArray<ParseResult.ParseIssue> = Array.isArray(issue.issues) ? issue.issues : [issue.issues as ParseResult.ParseIssue]
      const children: Array<ParseResult.ParseIssue> = []
      let kept = 0
      let omitted = 0
      for (const child of list) {
        const p = pruned(child, keep - kept)
        kept += p.kept
        omitted += p.omitted
        if (p.issue !== undefined) children.push(p.issue)
      }
      if (children.length === 0) return { kept, omitted }
      const issues = (children.length === 1 ? children[0] : children) as ParseResult.SingleOrNonEmpty<ParseResult.ParseIssue>
      return { issue: new ParseResult.Composite(issue.ast, issue.actual, issues, issue.output), kept, omitted }
    }
    default:
      return keep > 0 ? { issue, kept: 1, omitted: 0 } : { kept: 0, omitted: 1 }
  }
}

/**
 * One issue per path: a union's alternatives ("Expected a", "Expected b") become "Expected a | b". At most
 * MAX_ISSUES of them; `omitted` counts the failures left out.
 */
export const issuesOf = (error: ParseResult.ParseError): FieldIssues => {
  const { issue, omitted } = pruned(error.issue, MAX_ISSUES)
  const byPath = new Map<string, { path: Array<string>; messages: Array<string> }>()
  const formatted = issue === undefined ? [] : ParseResult.ArrayFormatter.formatIssueSync(issue)
  for (const i of formatted) {
    const path = i.path.map(String)
    const key = JSON.stringify(path)
    const entry = byPath.get(key) ?? { path, messages: [] }
    entry.messages.push(i.message)
    byPath.set(key, entry)
  }
  return boundIssues([...byPath.values()].map(({ path, messages }) => ({ path, message: mergeAlternatives(messages) })), omitted)
}

const mergeAlternatives = (messages: ReadonlyArray<string>): string => {
  if (messages.length === 1) return messages[0]
  const parts = messages.map((m) => /^Expected (.+), actual (.+)$/.exec(m))
  const actual = parts[0]?.[2]
  return parts.every((p) => p !== null && p[2] === actual)
    ? `Expected ${parts.map((p) => p![1]).join(" | ")}, actual ${actual}`
    : messages.join("; ")
}

/** True when decoding can change a value's shape (a transformation somewhere), not only check it. */
export const transforms = (ast: SchemaAST.AST): boolean => {
  switch (ast._tag) {
    case "Transformation":
    case "Suspend":
    case "Declaration":
      return true
    case "Refinement":
      return transforms(ast.from)
    case "Union":
      return ast.types.some(transforms)
    case "TupleType":
      return ast.elements.some((e) => transforms(e.type)) || ast.rest.some((r) => transforms(r.type))
    case "TypeLiteral":
      return ast.propertySignatures.some((p) => transforms(p.type)) || ast.indexSignatures.some((i) => transforms(i.type))
    default:
      return false
  }
}

/**
 * A decoder of client input: unknown keys refused. `accepts` names the top-level keys it takes (none when its
 * schema takes any key), so a surface can leave the keys it will refuse unparsed (http/edge/excess-keys.ts).
 */
export type InputDecoder = ((u: unknown) => Decoded) & { readonly accepts?: ReadonlySet<string> }

const withAccepts = (decode: (u: unknown) => Decoded, accepts: ReadonlySet<string> | undefined): InputDecoder =>
  accepts === undefined ? decode : Object.assign(decode, { accepts })

/** The keys a struct's encoded side declares, or undefined when it is not a struct or takes any key (a Record). */
const declaredKeys = (ast: SchemaAST.AST): ReadonlyArray<string> | undefined => {
  const encoded = SchemaAST.encodedAST(ast)
  if (!SchemaAST.isTypeLiteral(encoded) || encoded.indexSignatures.length > 0) return undefined
  return encoded.propertySignatures.map((p) => p.name).filter((k): k is string => typeof k === "string")
}

/**
 * Unknown keys refused by one pass over the input's keys before the decode: Schema's own check builds an issue
 * per key, and 200,000 of them took seconds. When some are found, the known keys are still decoded (the answer
 * names every kind of problem, unknown keys first as Schema words them), but the unknown ones never are.
 */
const refusingUnknownKeys = (ast: SchemaAST.AST, decode: (u: unknown) => Decoded): InputDecoder => {
  const known = declaredKeys(ast)
  if (known === undefined) return decode
  const knownSet: ReadonlySet<string> = new Set(known)
  const unexpected = `is unexpected, expected: ${known.map((k) => JSON.stringify(k)).join(" | ")}`
  return withAccepts((u) => {
    if (typeof u !== "object" || u === null || Array.isArray(u)) return decode(u)
    const input = u as Fields
    // The usual input has no unknown key: found without building the list of keys (for-in, own keys only).
    let unknown = false
    for (const key in input) if (Object.hasOwn(input, key) && !knownSet.has(key)) unknown = true
    if (!unknown) return decode(u)
    const issues = new IssueCollector()
    for (const key of Object.keys(input)) {
      if (!knownSet.has(key)) issues.add([key], unexpected)
    }
    const knownPart: Fields = {}
    for (const key of known) if (Object.hasOwn(input, key)) knownPart[key] = input[key]
    const rest = decode(knownPart)
    if (Either.isLeft(rest)) issues.addAll(rest.left)
    return Either.left(issues.issues)
  }, knownSet)
}

/** `decode`, first tried without Effect's parser where the struct allows it (fast-decode.ts); same answers. */
const withFastPath = (ast: SchemaAST.AST, options: typeof strict | typeof lenient, decode: (u: unknown) => Decoded) => {
  const fast = fastDecoder(ast, options)
  return fast === undefined ? decode : (u: unknown): Decoded => {
    const out = fast(u)
    return out === undefined ? decode(u) : Either.right(out)
  }
}

/**
 * Decode then encode: the wire carries the encoded form, and that is what the log stores. Without
 * transformations the decoded value already is the encoded one, so the encode is skipped (the hot path).
 */
export const storableDecoder = <A, I>(schema: Schema.Schema<A, I>, options: typeof strict | typeof lenient = strict): InputDecoder => {
  const decode = Schema.decodeUnknownEither(schema, options)
  const checked = (whole: (u: unknown) => Decoded) => (options === strict ? refusingUnknownKeys(schema.ast, whole) : whole)
  if (!transforms(schema.ast)) return checked(withFastPath(schema.ast, options, (u: unknown) => Either.mapLeft(decode(u), issuesOf) as Decoded))
  const encode = Schema.encodeEither(schema)
  return checked((u: unknown): Decoded =>
    Either.flatMap(Either.mapLeft(decode(u), issuesOf), (a) => Either.mapLeft(encode(a), issuesOf)) as Decoded)
}

/** Decodes to the typed values (params, for instance), unknown keys refused. */
export const typedDecoder = <A, I>(schema: Schema.Schema<A, I>): InputDecoder => {
  const decode = Schema.decodeUnknownEither(schema, strict)
  const slow = (u: unknown) => Either.mapLeft(decode(u), issuesOf) as Decoded
  return refusingUnknownKeys(schema.ast, transforms(schema.ast) ? slow : withFastPath(schema.ast, strict, slow))
}

/**
 * A stored row's fields in the current schema's form: decoded (defaults applied, fields of older schemas
 * dropped) then encoded. Left: why the row does not fit the schema.
 */
export const rowNormaliser = (struct: DataSchema) => storableDecoder(struct, lenient)

interface FieldCodec {
  /** Wire value to its storable (encoded) form: `{ [name]: value }` decoded then encoded. */
  readonly decode: (u: unknown) => Decoded
  /** Typed value to its storable form. */
  readonly encode: (u: unknown) => Decoded
  /** Whether `null` is a valid encoded value that means "absent" (optionalWith nullable): how a clear is stored. */
  readonly nullClears: boolean
}

const fieldCodec = (name: string, field: Schema.Struct.Field): FieldCodec => {
  const one = asData(Schema.Struct({ [name]: field }))
  // null clears the field when it decodes and encodes back to nothing (optionalWith nullable, as Option or not).
  const probe = Either.flatMap(Schema.decodeUnknownEither(one)({ [name]: null }), Schema.encodeEither(one))
  return {
    decode: storableDecoder(one),
    // Without a transformation, encoding checks what decoding checks and gives the same fields: the same fast path.
    encode: ((encode) => {
      const slow = (u: unknown) => Either.mapLeft(encode(u), issuesOf) as Decoded
      return transforms(one.ast) ? slow : withFastPath(one.ast, strict, slow)
    })(Schema.encodeUnknownEither(one, strict)),
    nullClears: Either.isRight(probe) && !(name in probe.right)
  }
}

const notAnObject = (u: unknown): Decoded =>
  Either.left([{ path: [], message: `Expected an object, actual ${u === null ? "null" : Array.isArray(u) ? "an array" : typeof u}` }])

/**
 * Partial changes, field by field. Only the present fields are decoded (so a default never fills in a field
 * the caller left out), and unknown keys are refused with the same message a whole-struct decode gives.
 */
export const patchCodecs = (fields: Schema.Struct.Fields) => {
  const codecs = new Map<string, FieldCodec>()
  for (const [name, field] of Object.entries(fields)) codecs.set(name, fieldCodec(name, field))
  const expected = [...codecs.keys()].map((k) => JSON.stringify(k)).join(" | ")

  const run = (u: unknown, step: (codec: FieldCodec, key: string, value: unknown) => Decoded | undefined): Decoded => {
    if (typeof u !== "object" || u === null || Array.isArray(u)) return notAnObject(u)
    const out: Fields = {}
    const issues = new IssueCollector()
    for (const key of Object.keys(u)) {
      const codec = codecs.get(key)
      if (codec === undefined) {
        issues.add([key], `is unexpected, expected: ${expected}`)
        continue
      }
      // An unknown key is only counted; a known one is decoded even then, so its issues are named too.
      const result = step(codec, key, (u as Fields)[key])
      if (result === undefined) continue
      if (Either.isLeft(result)) issues.addAll(result.left)
      else if (key in result.right) out[key] = result.right[key]
      // Decoded to "absent" (null on an optionalWith nullable field): the log stores the clear as null.
      else if (codec.nullClears) out[key] = null
    }
    return issues.size === 0 ? Either.right(out) : Either.left(issues.issues)
  }

  return {
    /** A wire patch (encoded values) to its storable form. */
    decodePatch: withAccepts((u: unknown) => run(u, (codec, key, value) => codec.decode({ [key]: value })), new Set(codecs.keys())),
    /** A method's typed change to its storable form; an `undefined` value means "unchanged", as in JSON. */
    encodePatch: (u: unknown) =>
      run(u, (codec, key, value) => (value === undefined ? undefined : codec.encode({ [key]: value })))
  }
}

/**
 * Whether decoding a value of `ast` can hand back objects of its input by reference. Schema's decode builds new
 * structs, records and arrays, but `Unknown`, `Any`, `object` and declared types (`instanceOf`, ...) answer their
 * input itself, with everything nested under it. A transformation is counted on both sides (its decode may pass
 * its input through).
 */
export const reachesOpaque = (ast: SchemaAST.AST, seen: Set<SchemaAST.AST> = new Set()): boolean => {
  if (seen.has(ast)) return false
  seen.add(ast)
  switch (ast._tag) {
    case "UnknownKeyword":
    case "AnyKeyword":
    case "ObjectKeyword":
    case "Declaration":
      return true
    case "Refinement":
      return reachesOpaque(ast.from, seen)
    case "Transformation":
      return reachesOpaque(ast.from, seen) || reachesOpaque(ast.to, seen)
    case "Suspend":
      return reachesOpaque(ast.f(), seen)
    case "Union":
      return ast.types.some((t) => reachesOpaque(t, seen))
    case "TupleType":
      return ast.elements.some((e) => reachesOpaque(e.type, seen)) || ast.rest.some((r) => reachesOpaque(r.type, seen))
    case "TypeLiteral":
      return ast.propertySignatures.some((p) => reachesOpaque(p.type, seen)) || ast.indexSignatures.some((i) => reachesOpaque(i.type, seen))
    default:
      return false
  }
}

/**
 * A deep copy of plain data: arrays and plain objects are copied, anything else (scalars, and objects of a class,
 * which JSON data never holds) is kept as it is. Each object is copied by a spread, then its object values in turn:
 * about twice as fast as a key-by-key copy on a row and an event, and ten times as fast as `structuredClone` (a
 * view's evolve gets a copy of every change it folds). A spread keeps an own `__proto__` key a key, and an own
 * key shadows the setter of that name, so the assignment below never sets a prototype.
 */
export const copyData = (value: unknown): unknown => {
  if (typeof value !== "object" || value === null) return value
  if (Array.isArray(value)) {
    const n = value.length
    const out: Array<unknown> = new Array(n)
    for (let i = 0; i < n; i++) out[i] = copyData(value[i])
    return out
  }
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return value
  const out: Fields = { ...(value as Fields) }
  for (const key in out) {
    if (!Object.hasOwn(out, key)) continue
    const item = out[key]
    if (typeof item === "object" && item !== null) out[key] = copyData(item)
  }
  return out
}

/**
 * Copies the fields whose decode would hand user code the stored objects themselves (`reachesOpaque`): a shallow
 * copy of `fields` with those fields deep-copied. Undefined when the struct has none, so that a type without such
 * fields pays nothing (the hot path: its decode already copies everything).
 */
export const opaqueFieldsCopier = (fields: Schema.Struct.Fields): ((u: Fields) => Fields) | undefined => {
  const names: Array<string> = []
  for (const [name, field] of Object.entries(fields)) {
    try {
      if (reachesOpaque(Schema.Struct({ [name]: field }).ast)) names.push(name)
    } catch {
      // not a schema: compile reports that
    }
  }
  if (names.length === 0) return undefined
  // Fields such as Schema.Date reach a declared type but store a string: nothing to copy, no spread either.
  return (u) => {
    let out: Fields | undefined
    for (const name of names) {
      const value = u[name]
      if (typeof value !== "object" || value === null || !Object.hasOwn(u, name)) continue
      out ??= { ...u }
      out[name] = copyData(value)
    }
    return out ?? u
  }
}

/**
 * Stored (encoded) fields to the typed values user code sees, as a copy of its own: the fields whose decode would
 * pass stored objects through are copied first (`opaqueFieldsCopier`), so that what user code changes in place is
 * never the writer's row or event.
 */
export const storedDecoder = (struct: DataSchema, fields: Schema.Struct.Fields): ((u: unknown) => Fields) => {
  const decode = Schema.decodeUnknownSync(struct)
  const copy = opaqueFieldsCopier(fields)
  return copy === undefined ? decode : (u) => decode(typeof u === "object" && u !== null ? copy(u as Fields) : u)
}
