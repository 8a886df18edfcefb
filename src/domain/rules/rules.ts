/**
 * The rules a type declares that no caller can bypass, compiled once at load time: its invariants (checked on
 * the row after every command, see invariants.ts), its guarded fields (only methods change them, see
 * guarded.ts) and its references (`ref("books")`, checked in the writer, see commands/reference-check.ts).
 */
import { Schema, SchemaAST } from "effect"
import type { EntityDef, InvariantSpec } from "../catalog.ts"
import { transforms } from "../codecs.ts"
import { refTarget } from "./refs.ts"

const CODE = /^[a-z][a-z0-9_]*$/

export interface CompiledInvariant {
  readonly code: string
  readonly message: string
  readonly check: InvariantSpec<any>["check"]
}

/** A field of another type (or this one) that holds ids of this type's rows. */
export interface IncomingRef {
  readonly type: string
  readonly field: string
}

export interface TypeRules {
  readonly invariants: ReadonlyArray<CompiledInvariant>
  readonly guarded: ReadonlySet<string>
  /** Reference fields: field -> referenced type. */
  readonly refs: ReadonlyMap<string, string>
  /** The fields, across the app, that reference this type: what a delete must look up. */
  readonly referencedBy: ReadonlyArray<IncomingRef>
  /** No field transforms (no defaults, no Date...): stored fields already are what a method sees. */
  readonly plainStored: boolean
}

/** The property signature of one field, on the encoded (stored) side: wrappers such as optionalWith undone. */
const encodedSignature = (name: string, field: Schema.Struct.Field) => {
  try {
    const ast = SchemaAST.encodedAST(Schema.Struct({ [name]: field }).ast)
    return SchemaAST.isTypeLiteral(ast) ? ast.propertySignatures.find((p) => p.name === name) : undefined
  } catch {
    return undefined // not a schema: compile reports that
  }
}

/** The type a field references, looking through NullOr/optional unions, refinements and transformations. */
const refOf = (ast: SchemaAST.AST): string | undefined => {
  const own = refTarget(ast)
  if (own !== undefined) return own
  switch (ast._tag) {
    case "Union":
      for (const member of ast.types) {
        const found = refOf(member)
        if (found !== undefined) return found
      }
      return undefined
    case "Refinement":
      return refOf(ast.from)
    case "Transformation":
      return refOf(ast.from) ?? refOf(ast.to)
    default:
      return undefined
  }
}

/** Every reference field of a type's fields: field -> referenced type. Never throws on a malformed field. */
export const refFields = (fields: Schema.Struct.Fields | undefined): Map<string, string> => {
  const refs = new Map<string, string>()
  for (const [name, field] of Object.entries(fields ?? {})) {
    const signature = encodedSignature(name, field)
    const target = signature === undefined ? undefined : refOf(signature.type)
    if (target !== undefined) refs.set(name, target)
  }
  return refs
}

/** Compiles one type's rules, adding a load-time problem for each mistake (naming the type and the rule). */
export const compileRules = (
  name: string,
  def: EntityDef,
  entities: Readonly<Record<string, EntityDef>>,
  problems: Array<string>
): TypeRules => {
  const fields = def.fields ?? {}
  const invariants: Array<CompiledInvariant> = []
  const declared: unknown = def.invariants ?? {}
  if (typeof declared !== "object" || declared === null || Array.isArray(declared)) {
    problems.push(`type "${name}": invariants must be an object of { check, message } by code`)
  } else {
    for (const [code, spec] of Object.entries(declared as Record<string, Partial<InvariantSpec<any>> | undefined>)) {
      const where = `type "${name}", invariant "${code}"`
      if (!CODE.test(code)) problems.push(`${where}: codes must match ${CODE} (clients branch on them)`)
      if (typeof spec?.check !== "function") problems.push(`${where}: needs a check function, (row) => boolean`)
      if (typeof spec?.message !== "string" || spec.message.length === 0) problems.push(`${where}: needs a message (what the refusal says)`)
      else if (typeof spec.check === "function") invariants.push({ code, message: spec.message, check: spec.check })
    }
  }
  const guarded = new Set<string>()
  const listed: unknown = def.guarded ?? []
  if (!Array.isArray(listed)) problems.push(`type "${name}": guarded must be a list of field names`)
  else {
    for (const field of listed) {
      const where = `type "${name}", guarded field ${JSON.stringify(field)}`
      if (typeof field !== "string" || !Object.hasOwn(fields, field)) problems.push(`${where}: not a field of the type`)
      else if (encodedSignature(field, fields[field])?.isOptional !== true)
        problems.push(`${where}: a create cannot set it, so it needs a default (Schema.optionalWith(..., { default })) or must be optional`)
      else guarded.add(field)
    }
  }
  const refs = refFields(fields)
  for (const [field, target] of refs) {
    if (!Object.hasOwn(entities, target)) problems.push(`type "${name}", field "${field}": ref("${target}") names no entity type of the app`)
  }
  const referencedBy: Array<IncomingRef> = []
  for (const [other, otherDef] of Object.entries(entities)) {
    for (const [field, target] of other === name ? refs : refFields(otherDef?.fields)) {
      if (target === name) referencedBy.push({ type: other, field })
    }
  }
  let plainStored = false
  try {
    plainStored = !transforms(Schema.Struct(fields).ast)
  } catch {
    // not schemas: compile reports that
  }
  return { invariants, guarded, refs, referencedBy, plainStored }
}
