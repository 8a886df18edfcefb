/**
 * The fields a list can be filtered and ordered by: a type's scalar and literal fields (strings, numbers,
 * booleans, unions of literals; optional or nullable ones too), compared in their encoded (stored) form.
 * Arrays, structs and anything else are not filterable. Each filter value is decoded through Schema, from
 * JSON (MCP `where`) or from the text of a query string (REST, `wo://` list URIs), with the field's own
 * refinements, so a value the field could never hold is refused by name rather than silently matching nothing.
 */
import { Either, type ParseResult, Schema, SchemaAST } from "effect"
import { issuesOf } from "./codecs.ts"
import { NOT_FINITE } from "./rules/input-rules.ts"

export type Scalar = string | number | boolean

export interface FilterableField {
  readonly name: string
  readonly kind: "string" | "number" | "boolean" | "literal"
  /** The values a literal field takes, in declaration order. */
  readonly literals: ReadonlyArray<Scalar>
  /** Whether a row can lack a value (optional, or null allowed): an absent value is then a sort key too. */
  readonly absentable: boolean
  /** A filter value from JSON; Left: why it is not one (without the field's name: the caller adds it). */
  readonly fromJson: (u: unknown) => Either.Either<Scalar, string>
  /** A filter value from a query string's text: `published`, `12.5`, `true`. */
  readonly fromText: (s: string) => Either.Either<Scalar, string>
}

/** The union's members, nested unions flattened, without `undefined` and `null` (absent values never match). */
const members = (ast: SchemaAST.AST): Array<SchemaAST.AST> =>
  SchemaAST.isUnion(ast)
    ? ast.types.flatMap(members)
    : ast._tag === "UndefinedKeyword" || (SchemaAST.isLiteral(ast) && ast.literal === null) ? [] : [ast]

const allMembers = (ast: SchemaAST.AST): Array<SchemaAST.AST> => (SchemaAST.isUnion(ast) ? ast.types.flatMap(allMembers) : [ast])

const unrefined = (ast: SchemaAST.AST): SchemaAST.AST => (SchemaAST.isRefinement(ast) ? unrefined(ast.from) : ast)

type Kind = { readonly kind: FilterableField["kind"]; readonly literals: ReadonlyArray<Scalar> }

const kindOf = (types: ReadonlyArray<SchemaAST.AST>): Kind | undefined => {
  const bare = types.map(unrefined)
  if (bare.length === 0) return undefined
  if (bare.every((t) => SchemaAST.isLiteral(t) || SchemaAST.isEnums(t))) {
    const literals = bare.flatMap((t) =>
      SchemaAST.isLiteral(t) ? [t.literal] : SchemaAST.isEnums(t) ? t.enums.map(([, v]) => v) : [])
    return literals.every((l) => typeof l === "string" || typeof l === "number" || typeof l === "boolean")
      ? { kind: "literal", literals: literals as ReadonlyArray<Scalar> }
      : undefined
  }
  if (bare.length !== 1) return undefined
  switch (bare[0]._tag) {
    case "StringKeyword":
    case "TemplateLiteral":
      return { kind: "string", literals: [] }
    case "NumberKeyword":
      return { kind: "number", literals: [] }
    case "BooleanKeyword":
      return { kind: "boolean", literals: [] }
    default:
      return undefined
  }
}

/** One message, with a union's alternatives merged: `Expected "draft" | "published", actual 3`. */
const firstMessage = (error: ParseResult.ParseError) => issuesOf(error).map((i) => i.message).join("; ")

const decodeNumberText = Schema.decodeUnknownEither(Schema.compose(Schema.NumberFromString, Schema.Finite))

/** The field as a filter, or undefined when it is not a scalar or literal field. */
export const filterableField = (name: string, field: Schema.Struct.Field): FilterableField | undefined => {
  // The encoded side, refinements kept: what the log stores and what a filter value is compared with.
  const struct = SchemaAST.encodedBoundAST(Schema.Struct({ [name]: field }).ast)
  if (!SchemaAST.isTypeLiteral(struct)) return undefined
  const signature = struct.propertySignatures.find((p) => p.name === name)
  if (signature === undefined) return undefined
  const types = members(signature.type)
  const absentable = signature.isOptional || types.length !== allMembers(signature.type).length
  const kind = kindOf(types)
  if (kind === undefined) return undefined
  const decode = Schema.decodeUnknownEither(Schema.make<unknown, unknown, never>(SchemaAST.Union.make(types)))
  const fromJson = (u: unknown): Either.Either<Scalar, string> =>
    // 1e400 parses to Infinity, which Schema.Number takes: refused as the input rules and the query text refuse it.
    typeof u === "number" && !Number.isFinite(u)
      ? Either.left(NOT_FINITE)
      : Either.mapBoth(decode(u), { onLeft: firstMessage, onRight: (v) => v as Scalar })
  const fromText = (s: string): Either.Either<Scalar, string> => {
    switch (kind.kind) {
      case "string":
        return fromJson(s)
      case "number":
        return Either.match(decodeNumberText(s), {
          onLeft: () => Either.left(`Expected a number, actual ${JSON.stringify(s)}`),
          onRight: fromJson
        })
      case "boolean":
        return s === "true" || s === "false" ? fromJson(s === "true") : Either.left(`Expected true or false, actual ${JSON.stringify(s)}`)
      case "literal": {
        const literal = kind.literals.find((l) => String(l) === s)
        return literal === undefined
          ? Either.left(`Expected ${kind.literals.map((l) => JSON.stringify(l)).join(" | ")}, actual ${JSON.stringify(s)}`)
          : fromJson(literal)
      }
    }
  }
  return { name, kind: kind.kind, literals: kind.literals, absentable, fromJson, fromText }
}

/** Every filterable field of a type, in declaration order. */
export const filterableFields = (fields: Schema.Struct.Fields): ReadonlyMap<string, FilterableField> => {
  const out = new Map<string, FilterableField>()
  for (const [name, field] of Object.entries(fields)) {
    const filterable = filterableField(name, field)
    if (filterable !== undefined) out.set(name, filterable)
  }
  return out
}
