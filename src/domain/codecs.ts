/**
 * How a type's fields travel between the wire, the log and the typed values methods see. The wire and the
 * log carry the encoded (JSON) form; decoding checks it and applies defaults, encoding turns typed values
 * back. Patches go field by field, each through its own one-field Struct, so every property signature
 * (optional, optionalWith default or nullable, NullOr) works in a patch as it does in a create.
 */
import { Either, ParseResult, Schema, type SchemaAST } from "effect"
import type { FieldIssue } from "./errors.ts"

export type Fields = Record<string, unknown>
export type Decoded = Either.Either<Fields, ReadonlyArray<FieldIssue>>

export const strict = { errors: "all", onExcessProperty: "error" } as const
/** Stored rows keep the fields of older schemas; those are dropped, not refused (the log keeps them). */
const lenient = { errors: "all" } as const

/** Entity fields carry no context requirements (they are plain data); this is the erased struct type. */
export type DataSchema = Schema.Schema<Fields, Fields, never>
export const asData = (s: Schema.Schema.Any) => s as unknown as DataSchema

/** One issue per path: a union's alternatives ("Expected a", "Expected b") become "Expected a | b". */
export const issuesOf = (error: ParseResult.ParseError): ReadonlyArray<FieldIssue> => {
  const byPath = new Map<string, { path: Array<string>; messages: Array<string> }>()
  for (const i of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const path = i.path.map(String)
    const key = JSON.stringify(path)
    const entry = byPath.get(key) ?? { path, messages: [] }
    entry.messages.push(i.message)
    byPath.set(key, entry)
  }
  return [...byPath.values()].map(({ path, messages }) => ({ path, message: mergeAlternatives(messages) }))
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
 * Decode then encode: the wire carries the encoded form, and that is what the log stores. Without
 * transformations the decoded value already is the encoded one, so the encode is skipped (the hot path).
 */
export const storableDecoder = <A, I>(schema: Schema.Schema<A, I>, options: typeof strict | typeof lenient = strict) => {
  const decode = Schema.decodeUnknownEither(schema, options)
  if (!transforms(schema.ast)) return (u: unknown) => Either.mapLeft(decode(u), issuesOf) as Decoded
  const encode = Schema.encodeEither(schema)
  return (u: unknown): Decoded =>
    Either.flatMap(Either.mapLeft(decode(u), issuesOf), (a) => Either.mapLeft(encode(a), issuesOf)) as Decoded
}

/** Decodes to the typed values (params, for instance), unknown keys refused. */
export const typedDecoder = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema, strict)
  return (u: unknown) => Either.mapLeft(decode(u), issuesOf) as Decoded
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
    encode: ((encode) => (u: unknown) => Either.mapLeft(encode(u), issuesOf) as Decoded)(Schema.encodeUnknownEither(one, strict)),
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
    const issues: Array<FieldIssue> = []
    for (const key of Object.keys(u)) {
      const codec = codecs.get(key)
      if (codec === undefined) {
        issues.push({ path: [key], message: `is unexpected, expected: ${expected}` })
        continue
      }
      const result = step(codec, key, (u as Fields)[key])
      if (result === undefined) continue
      if (Either.isLeft(result)) issues.push(...result.left)
      else if (key in result.right) out[key] = result.right[key]
      // Decoded to "absent" (null on an optionalWith nullable field): the log stores the clear as null.
      else if (codec.nullClears) out[key] = null
    }
    return issues.length === 0 ? Either.right(out) : Either.left(issues)
  }

  return {
    /** A wire patch (encoded values) to its storable form. */
    decodePatch: (u: unknown) => run(u, (codec, key, value) => codec.decode({ [key]: value })),
    /** A method's typed change to its storable form; an `undefined` value means "unchanged", as in JSON. */
    encodePatch: (u: unknown) =>
      run(u, (codec, key, value) => (value === undefined ? undefined : codec.encode({ [key]: value })))
  }
}
