/**
 * The one order of field values every surface uses (sorted lists, cursors, range filters, the store's index keys):
 * absent or null first, then booleans, numbers and strings (by UTF-16 code units, not locale); anything else
 * last and equal among itself.
 */

const rank = (v: unknown) => {
  switch (typeof v) {
    case "undefined":
      return 0
    case "boolean":
      return 1
    case "number":
      return 2
    case "string":
      return 3
    default:
      return v === null ? 0 : 4
  }
}

/** The field values' order: absent, booleans, numbers, strings; anything else last and equal. */
export const compareValues = (a: unknown, b: unknown): number => {
  // The common case first: two values of one type, as a field's values are.
  if (typeof a === typeof b && (typeof a === "number" || typeof a === "string")) return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0
  const ra = rank(a)
  const rb = rank(b)
  if (ra !== rb) return ra - rb
  if (ra === 0 || ra === 4) return 0
  return (a as string) < (b as string) ? -1 : (a as string) > (b as string) ? 1 : 0
}
