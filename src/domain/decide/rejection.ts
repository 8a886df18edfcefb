/**
 * A `reject(code, message)` that an author's method or command returned, read as the domain's refusal. What a
 * hand-made Rejection holds is described, never trusted to be a string; a missing or empty code is the default one.
 * Reading it is reading user data (a getter or a Proxy may throw): callers read it inside `runUserCode`.
 */
import { DEFAULT_REJECTION_CODE, type Rejection } from "../catalog.ts"
import { Rejected } from "../errors.ts"
import { describeThrown } from "./user-code.ts"

export const rejectedBy = (rejection: Rejection, about: { readonly type: string; readonly id: string; readonly operation: string }) => {
  const code: unknown = rejection.code
  const message: unknown = rejection.message
  return new Rejected({
    type: about.type,
    id: about.id,
    operation: about.operation,
    code: typeof code === "string" && code.length > 0 ? code : DEFAULT_REJECTION_CODE,
    reason: typeof message === "string" ? message : describeThrown(message)
  })
}
