/**
 * The one spelling of a row id. The store assigns ids per type, counting from 1, and keys rows by them padded to
 * MAX_ID_DIGITS digits; an id travels as its canonical decimal string: "1", "42", never "01", "+1", " 1" or "1e3".
 * A surface answers any other spelling as a row that does not exist (NotFound, or `missing_reference` for a
 * reference) before anything reads the store, so that one row is never reachable under two names (the log, the
 * writer's batch, the reference index and subscriptions all compare ids as strings).
 */

/** The digits of the largest id the store keys rows by (log/classic-level/log-keys.ts pads to this width). */
export const MAX_ID_DIGITS = 12
/** The largest id the store can assign. */
export const MAX_ID = 10 ** MAX_ID_DIGITS - 1

const CANONICAL = new RegExp(`^(?:0|[1-9][0-9]{0,${MAX_ID_DIGITS - 1}})$`)

/** Whether `id` is the canonical spelling of an id within the store's range ("0" included: it names no row). */
export const isCanonicalId = (id: unknown): boolean => typeof id === "string" && CANONICAL.test(id)
