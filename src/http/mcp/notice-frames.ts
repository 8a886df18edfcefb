/**
 * A notice's SSE bytes, built once per change and era, whatever the number of streams it reaches:
 *  - legacy: the whole frame is the same for every session (its id, `get-<seq>[.<uri>]`, is a log position);
 *  - modern: the frame differs only by the listen's subscriptionId, so it is a prebuilt prefix and suffix
 *    with the stream's own id bytes spliced in between (push-sink.ts writes the three back to back).
 * The caches are keyed by the notice object the registry hands to every sink, so they live as long as the
 * change's delivery. `frameBuilds` counts the builds (tests check one per change and era).
 */
import type { Notice } from "../../subscriptions/registry.ts"
import { positionId } from "../../subscriptions/resumption.ts"
import { META, Notification } from "./protocol.ts"

export const frameBuilds = { legacy: 0, modern: 0 }

const legacyFrames = new WeakMap<Notice, Buffer>()
const modernFrames = new WeakMap<Notice, readonly [Buffer, Buffer]>()
// The last notice asked for, per era: it is kept alive only until the next one (a notice and its bytes, small).
let lastLegacy: Notice | undefined
let lastLegacyFrame: Buffer | undefined
let lastModern: Notice | undefined
let lastModernParts: readonly [Buffer, Buffer] | undefined

/** A legacy GET stream's `notifications/resources/updated` frame for a notice at `seq` on `uri`. */
export const legacyUpdatedFrame = (uri: string, seq: number): Buffer =>
  Buffer.from(
    `id: ${positionId(seq, uri)}\nevent: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/resources/updated", params: { uri } })}\n\n`
  )

/** The legacy frame of a live notice, shared by every session it reaches. */
export const legacyFrame = (notice: Notice & { readonly _tag: "Updated" }): Buffer => {
  if (notice === lastLegacy) return lastLegacyFrame!
  let frame = legacyFrames.get(notice)
  if (frame === undefined) {
    frameBuilds.legacy++
    legacyFrames.set(notice, (frame = legacyUpdatedFrame(notice.uri, notice.seq)))
  }
  lastLegacy = notice
  lastLegacyFrame = frame
  return frame
}

/** wo dev's catalog change on a legacy GET stream: the tool and resource lists changed (no id: not a log position). */
export const legacyCatalogChangedFrames: Buffer = Buffer.from(
  [Notification.toolListChanged, Notification.resourceListChanged]
    .map((method) => `event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", method })}\n\n`)
    .join("")
)

const SUBSCRIPTION_ID = JSON.stringify(META.subscriptionId)
/** What follows the spliced id in every modern frame (see `modernSplice`). */
const MODERN_SUFFIX = Buffer.from("}}}\n\n")

/** The bytes before and after the subscriptionId of a modern message with these params (without `_meta`). */
export const modernSplice = (method: string, params: object): readonly [Buffer, Buffer] => {
  const head = JSON.stringify({ jsonrpc: "2.0", method, params })
  // `{..., "params": {...}}`: open the params again for `_meta`, whose value is the spliced id.
  const open = head.slice(0, -2) + (head.endsWith("{}}") ? "" : ",")
  return [Buffer.from(`event: message\ndata: ${open}"_meta":{${SUBSCRIPTION_ID}:`), MODERN_SUFFIX]
}

/**
 * A listen stream's id and the suffix every modern frame ends with, as one buffer: a frame is then two parts, the
 * notice's prefix and this. Hand-tuned (bench/readers-ab.ts): one part less to queue and copy per stream per notice.
 */
export const subscriptionTail = (idBytes: Buffer): Buffer => Buffer.concat([idBytes, MODERN_SUFFIX])

/** The modern frame parts of a live notice, shared by every listen stream it reaches. */
export const modernParts = (notice: Notice): readonly [Buffer, Buffer] => {
  // Hand-tuned: called once per stream per notice, and every stream of a notice asks in a row; a compare, not a
  // WeakMap lookup, answers all but the first.
  if (notice === lastModern) return lastModernParts!
  let parts = modernFrames.get(notice)
  if (parts === undefined) {
    frameBuilds.modern++
    parts = notice._tag === "Updated"
      ? modernSplice("notifications/resources/updated", { uri: notice.uri })
      : modernSplice("notifications/resources/list_changed", {})
    modernFrames.set(notice, parts)
  }
  lastModern = notice
  lastModernParts = parts
  return parts
}

/** A listen stream's id, as the JSON bytes spliced between a frame's parts. */
export const subscriptionIdBytes = (id: string | number): Buffer => Buffer.from(JSON.stringify(id))
