/**
 * Invariants: rules every row of a type obeys, checked on the row after every command of that type (create,
 * update, method, app command) inside the writer, before anything is appended. A false check is the domain's
 * refusal (Rejected with the invariant's code); a check that throws or answers something else than a boolean is
 * the author's bug (UserCodeFailure: 500 MethodFailed naming the invariant, nothing written).
 */
import { Either } from "effect"
import type { Row } from "./catalog.ts"
import type { CompiledType } from "./compile.ts"
import { Rejected } from "./errors.ts"
import { describeThrown, runUserCode, userCodeFailure, type UserCodeFailure } from "./user-code.ts"

const isScalar = (v: unknown) => v === null || typeof v !== "object"

/**
 * Stored (encoded) fields as a method sees them. When the type's schema transforms nothing and every value is a
 * scalar, the stored fields already are the decoded ones: a copy, without a decode (the hot path of a method).
 */
export const decodedRow = (type: CompiledType, id: string, version: number, stored: Record<string, unknown>): Row => {
  if (type.rules.plainStored) {
    let plain = true
    for (const key in stored) if (!isScalar(stored[key])) plain = false
    if (plain) return { id, version, ...stored }
  }
  return { id, version, ...type.decodeStored(stored) }
}

/** Checks every invariant of the type on `row` (decoded), in declaration order; the first that fails answers. */
export const checkInvariants = (
  type: CompiledType,
  operation: string,
  row: Row
): Either.Either<void, Rejected | UserCodeFailure> => {
  for (const invariant of type.rules.invariants) {
    const held = runUserCode(() => invariant.check(row))
    if (Either.isLeft(held)) {
      return Either.left(userCodeFailure(`invariant ${invariant.code} threw: ${held.left.reason}`, held.left.trace))
    }
    if (held.right === true) continue
    if (held.right !== false) {
      return Either.left(userCodeFailure(`invariant ${invariant.code} returned ${describeThrown(held.right)}, not a boolean`))
    }
    return Either.left(new Rejected({ type: type.name, id: row.id, operation, code: invariant.code, reason: invariant.message }))
  }
  return Either.right(undefined)
}
