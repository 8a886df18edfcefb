/**
 * The decode of the common struct without Effect's parser: every field required, each a string, a number, a
 * boolean, a literal or a union of literals, or a refinement of one of these (its filter run as Schema runs it).
 * It answers only for input that passes, with what Schema's decode gives then (a new object, the fields in their
 * declared order); undefined sends the input to the Schema decode, which is then the one that words any issue.
 * Schema's parser leaves about 4 KB of garbage per decode of the pricing example's create (heap sampling under
 * bench:profile), the largest share of a durable write's allocations in our code.
 *
 * Input is parsed JSON: an object with no symbol keys and no non-enumerable ones (those would be Schema's excess
 * keys, and are not counted here).
 *
 * With `arraysAsIs`, a field may also be an array of such values (Schema.Array), checked element by element and
 * answered as the same array, not a copy: for a caller that only encodes the answer (a view's value), never for
 * one that hands it to user code.
 */
import { Option, SchemaAST } from "effect"

type Check = (u: unknown) => boolean

const checkOf = (ast: SchemaAST.AST, options: SchemaAST.ParseOptions, arraysAsIs: boolean): Check | undefined => {
  switch (ast._tag) {
    case "StringKeyword":
      return (u) => typeof u === "string"
    case "NumberKeyword":
      return (u) => typeof u === "number"
    case "BooleanKeyword":
      return (u) => typeof u === "boolean"
    case "Literal": {
      const literal = ast.literal
      return (u) => u === literal
    }
    case "Union": {
      if (!ast.types.every(SchemaAST.isLiteral)) return undefined
      const literals = ast.types.map((t) => (t as SchemaAST.Literal).literal)
      return (u) => literals.some((l) => l === u)
    }
    case "TupleType": {
      if (!arraysAsIs || ast.elements.length > 0 || ast.rest.length !== 1) return undefined
      const item = checkOf(ast.rest[0].type, options, arraysAsIs)
      if (item === undefined) return undefined
      return (u) => {
        // A plain array only: Schema copies another (a subclass) into one, which the answer, not a copy, would not.
        if (!Array.isArray(u) || Object.getPrototypeOf(u) !== Array.prototype) return false
        // By index: a hole reads as undefined and fails, as it does in Schema.
        for (let i = 0; i < u.length; i++) if (!item(u[i])) return false
        return true
      }
    }
    case "Refinement": {
      const from = checkOf(ast.from, options, arraysAsIs)
      if (from === undefined) return undefined
      return (u) => from(u) && Option.isNone(ast.filter(u, options, ast))
    }
    default:
      return undefined
  }
}

/** The fast decode of a struct `ast` (decoded with `options`), or undefined when its shape is not one it covers. */
export const fastDecoder = (
  ast: SchemaAST.AST,
  options: SchemaAST.ParseOptions,
  { arraysAsIs = false }: { readonly arraysAsIs?: boolean } = {}
): ((u: unknown) => Record<string, unknown> | undefined) | undefined => {
  if (!SchemaAST.isTypeLiteral(ast) || ast.indexSignatures.length > 0 || ast.propertySignatures.length === 0) return undefined
  const names: Array<string> = []
  const checks: Array<Check> = []
  for (const ps of ast.propertySignatures) {
    if (ps.isOptional || typeof ps.name !== "string") return undefined
    const check = checkOf(ps.type, options, arraysAsIs)
    if (check === undefined) return undefined
    names.push(ps.name)
    checks.push(check)
  }
  const n = names.length
  return (u) => {
    if (typeof u !== "object" || u === null || Array.isArray(u)) return undefined
    const input = u as Record<string, unknown>
    const out: Record<string, unknown> = {}
    for (let i = 0; i < n; i++) {
      const name = names[i]
      if (!Object.hasOwn(input, name)) return undefined
      const value = input[name]
      if (!checks[i](value)) return undefined
      out[name] = value
    }
    // No key beyond the declared ones (counted without building the list of keys).
    let keys = 0
    for (const key in input) if (Object.hasOwn(input, key)) keys++
    return keys === n ? out : undefined
  }
}
