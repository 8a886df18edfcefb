/**
 * Invariants: rules every row of a type obeys, checked on the row after every command of that type (create,
 * update, method, app command) inside the writer, before anything is appended. A false check is the domain's
 * refusal (Rejected with the invariant's code); a check that throws or answers something else than a boolean is
 * the author's bug (UserCodeFailure: 500 MethodFailed naming the invariant, nothing written).
 */
import type { Row } from "../catalog.ts"
import type { CompiledType } from "../compile.ts"
import { Rejected } from "../errors.ts"
import { describeThrown, RETURNED_PROMISE, settleThenable, thrownByUserCode, userCodeFailure, type UserCodeFailure } from "../decide/user-code.ts"

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

/**
 * `decodedRow` of the stored fields with `change` written over them: the row after a method or an update, built in
 * one copy on the hot path (the invariant's per-call cost, bench/scenarios/invariant.ts).
 */
export const decodedRowAfter = (
  type: CompiledType,
  id: string,
  version: number,
  stored: Record<string, unknown>,
  change: Record<string, unknown>
): Row => {
  if (type.rules.plainStored) {
    let plain = true
    for (const key in stored) if (!isScalar(stored[key])) plain = false
    for (const key in change) if (!isScalar(change[key])) plain = false
    if (plain) return { id, version, ...stored, ...change }
  }
  return { id, version, ...type.decodeStored({ ...stored, ...change }) }
}

/**
 * Checks every invariant of the type on `row` (decoded), in declaration order: the refusal of the first that fails,
 * or undefined when all hold. Each check is run without a closure or an Either per call (a write with an invariant
 * pays only the check itself beside one without: bench/scenarios/invariant.ts); what it throws or returns is judged
 * as `runUserCode` judges it.
 */
export const invariantRefusal = (type: CompiledType, operation: string, row: Row): Rejected | UserCodeFailure | undefined => {
  const invariants = type.rules.invariants
  for (let i = 0; i < invariants.length; i++) {
    const invariant = invariants[i]
    let held: unknown
    try {
      held = invariant.check(row)
    } catch (e) {
      const thrown = thrownByUserCode(e)
      return userCodeFailure(`invariant ${invariant.code} threw: ${thrown.reason}`, thrown.trace)
    }
    if (held === true) continue
    if (settleThenable(held)) return userCodeFailure(`invariant ${invariant.code} threw: ${RETURNED_PROMISE}`, RETURNED_PROMISE)
    if (held !== false) return userCodeFailure(`invariant ${invariant.code} returned ${describeThrown(held)}, not a boolean`)
    return new Rejected({ type: type.name, id: row.id, operation, code: invariant.code, reason: invariant.message })
  }
  return undefined
}

