/**
 * The Decider for every entity type: `decide(type, id, state, intent, expectedVersion) -> event draft` and
 * `evolve(state, event) -> state`, with `undefined` as the initial state. All business rules live here and run
 * without I/O; the group-commit writer and the decider specs decide through `decideIsolated`, and every
 * projection (live, recovery, `wo replay`) folds `evolve`.
 */
import { Either } from "effect"
import { isRejection, type Row } from "../catalog.ts"
import type { CompiledMethod, CompiledType } from "../compile.ts"
import { MethodFailed, NotFound, Rejected, ValidationFailed, VersionConflict, type CommandError, type FieldIssue } from "../errors.ts"
import type { EventKind, StoredEvent } from "../events.ts"
import { decodedRow, decodedRowAfter, invariantRefusal } from "../rules/invariants.ts"
import { rejectedBy } from "./rejection.ts"
import { describeThrown, issuesText, notPlainObject, plainData, runUserCode, traceOf, userCodeFailure, type UserCodeFailure } from "./user-code.ts"

/** A command whose payload has already been decoded against the type's schema. */
export type Intent =
  | { readonly _tag: "Create"; readonly fields: Record<string, unknown> }
  | { readonly _tag: "Update"; readonly patch: Record<string, unknown> }
  | { readonly _tag: "Delete" }
  | { readonly _tag: "Invoke"; readonly method: CompiledMethod; readonly params: Record<string, unknown> }

export interface EventDraft {
  readonly kind: EventKind
  readonly method?: string
  readonly params?: Record<string, unknown>
  readonly data: Record<string, unknown>
}

/**
 * A method's result, checked: its refusal (`reject`), or its change as storable fields, or why it cannot be
 * stored (it threw, or returned something its type's schema or JSON refuses: the author's bug, not the caller's).
 */
const applyMethod = (
  type: CompiledType,
  method: CompiledMethod,
  row: Row,
  params: Record<string, unknown>
): Either.Either<Record<string, unknown>, Rejected | UserCodeFailure> => {
  // `row` is a copy of its own (decodedRow); the params are the event's, so apply gets a copy where their decode shares objects.
  const copyParams = method.copyParams
  const applied = runUserCode(() => method.spec.apply(row as never, copyParams === undefined ? params : copyParams(params)))
  if (Either.isLeft(applied)) return Either.left(applied.left)
  const returned = (issues: ReadonlyArray<FieldIssue>) =>
    userCodeFailure(`it returned ${issuesText(issues)}`)
  // Reading the result is reading user data: a getter or a Proxy may throw here too.
  const checked = runUserCode((): Either.Either<Record<string, unknown>, Rejected | UserCodeFailure> => {
    const change = applied.right
    if (isRejection(change)) {
      // The domain's own answer.
      return Either.left(rejectedBy(change, { type: type.name, id: String(row.id), operation: method.name }))
    }
    // A Map, a Date or a class instance would pass as an empty change.
    const shape = notPlainObject(change)
    if (shape !== undefined) return Either.left(userCodeFailure(`it returned a value that ${shape}`))
    const encoded = type.encodePatch(change)
    if (Either.isLeft(encoded)) return Either.left(returned(encoded.left))
    const undeclared = method.changes === undefined ? undefined : Object.keys(encoded.right).find((field) => !method.changes!.has(field))
    if (undeclared !== undefined) return Either.left(userCodeFailure(`it changed ${undeclared}, which its changes do not list`))
    // A copy of plain JSON data: what the log stores is what was checked.
    return Either.mapBoth(plainData(encoded.right), { onLeft: returned, onRight: (data) => data as Record<string, unknown> })
  })
  return Either.isLeft(checked) ? Either.left(checked.left) : checked.right
}

/**
 * Decides the event for an intent against the current row. `expectedVersion`, when given, must equal the
 * current version: a stale one is a conflict, never a silent overwrite. A method whose `apply` throws or
 * returns a change that cannot be stored gives a UserCodeFailure, which the writer answers as MethodFailed.
 */
export const decide = (
  type: CompiledType,
  id: string,
  state: Row | undefined,
  intent: Intent,
  expectedVersion: number | undefined
): Either.Either<EventDraft, CommandError | UserCodeFailure> => {
  if (intent._tag === "Create") {
    const draft: EventDraft = { kind: "created", data: intent.fields }
    // Without invariants there is no row to check (and none to build for it).
    return type.rules.invariants.length === 0 ? Either.right(draft) : checked(type, "create", draft, decodedRow(type, id, 1, intent.fields))
  }
  if (state === undefined) return Either.left(new NotFound({ type: type.name, id }))
  if (expectedVersion !== undefined && expectedVersion !== state.version) {
    return Either.left(new VersionConflict({ type: type.name, id, expected: expectedVersion, actual: state.version }))
  }
  const { id: _id, version, ...stored } = state
  switch (intent._tag) {
    case "Update":
      return Object.keys(intent.patch).length === 0
        ? Either.left(new ValidationFailed({ type: type.name, issues: [{ path: [], message: "no fields to update" }] }))
        : type.rules.invariants.length === 0
        ? Either.right({ kind: "updated", data: intent.patch })
        : checked(type, "update", { kind: "updated", data: intent.patch }, decodedRowAfter(type, id, version + 1, stored, intent.patch))
    case "Delete":
      return Either.right({ kind: "deleted", data: {} })
    case "Invoke": {
      const row = decodedRow(type, id, version, stored)
      const applied = applyMethod(type, intent.method, row, intent.params)
      if (Either.isLeft(applied)) return Either.left(applied.left)
      const data = applied.right
      const draft: EventDraft = { kind: "invoked", method: intent.method.name, params: intent.params, data }
      return type.rules.invariants.length === 0 ? Either.right(draft) : checked(type, intent.method.name, draft, decodedRowAfter(type, id, version + 1, stored, data))
    }
  }
}

/** Which command a decision is for, as MethodFailed names it. */
export interface DecisionOf {
  readonly type: string
  readonly id: string
  readonly operation: string
}

/**
 * Runs a decision (`decide`, and whatever the caller does with its draft) so that the author's bug fails this
 * one command alone: a UserCodeFailure it returns, or anything it throws (decoding and encoding rows included),
 * becomes MethodFailed, and `failed` hears it with its trace, for the log. The writer and the decider specs both
 * decide through it, so a spec refuses exactly what the server would.
 */
export const decideIsolated = <A>(
  of: DecisionOf,
  decision: () => Either.Either<A, CommandError | UserCodeFailure>,
  failed?: (error: MethodFailed, trace: string) => void
): Either.Either<A, CommandError> => {
  const fail = (reason: string, trace: string) => {
    const error = new MethodFailed({ type: of.type, id: of.id, operation: of.operation, reason })
    failed?.(error, trace)
    return Either.left(error)
  }
  try {
    const result = decision()
    // A Right is returned as it is (no copy per decision): only its Left type differs.
    if (Either.isRight(result)) return result as Either.Either<A, never>
    const refusal = result.left
    return refusal._tag === "UserCodeFailure" ? fail(refusal.reason, refusal.trace) : Either.left(refusal)
  } catch (e) {
    return fail(describeThrown(e), traceOf(e))
  }
}

/** The draft, once the row after it holds every invariant of its type (callers skip it when none is declared). */
const checked = (type: CompiledType, operation: string, draft: EventDraft, rowAfter: Row): Either.Either<EventDraft, Rejected | UserCodeFailure> => {
  const refusal = invariantRefusal(type, operation, rowAfter)
  return refusal === undefined ? Either.right(draft) : Either.left(refusal)
}

/** Folds one event into the row. Key order is stable ({id, version, ...fields}) so JSON bodies are too. */
export const evolve = (state: Row | undefined, event: StoredEvent): Row | undefined => {
  switch (event.kind) {
    case "created":
      return { id: event.id, version: event.version, ...event.data }
    case "deleted":
      return undefined
    case "updated":
    case "invoked":
      return state === undefined ? undefined : { ...state, ...event.data, version: event.version }
  }
}
