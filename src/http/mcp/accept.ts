/** Accept header matching for the transport checks (C6). */

/** True when an Accept header allows `type` (absent means anything, as in HTTP). */
export const accepts = (accept: string | undefined, type: string): boolean => {
  if (accept === undefined) return true
  const [major] = type.split("/")
  return accept.split(",").some((part) => {
    const media = part.split(";")[0].trim().toLowerCase()
    return media === type || media === "*/*" || media === `${major}/*`
  })
}
