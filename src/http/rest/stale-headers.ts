/**
 * The mark on an older declaration's view value or keyed entries, served while the current declaration is folded,
 * as REST headers (views.ts `StaleMarker`): `WO-View-Version`, `WO-View-Exact-At`, `WO-View-Next-Version`, and
 * `WO-View-Next-Failed` once the new fold failed.
 */
import type { StaleMarker } from "../../projections/views/views.ts"

/** A header value carries visible ASCII and spaces only: anything else in a failure's text is percent-encoded. */
const headerSafe = (text: string) => text.replace(/[^\x20-\x7e]/gu, (c) => encodeURIComponent(c))

export const staleMarkHeaders = (mark: StaleMarker) => ({
  "wo-view-version": mark.version,
  "wo-view-exact-at": String(mark.exactAt),
  "wo-view-next-version": mark.nextVersion,
  ...(mark.nextFailed === undefined ? {} : { "wo-view-next-failed": headerSafe(mark.nextFailed) })
})

/** The mark with an ETag that names the version too, as the new value may change at the same seq. */
export const staleHeaders = (seq: number, mark: StaleMarker) => ({ etag: `"${seq}@${mark.version}"`, ...staleMarkHeaders(mark) })
