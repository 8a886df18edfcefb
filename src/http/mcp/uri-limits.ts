/**
 * The bounds on what a client may make the server hold per URI, so no client can make it hold unbounded memory: a URI
 * is at most WO_MAX_URI_LENGTH bytes, checked before anything parses, indexes or stores it, and the URIs one session
 * or listen stream subscribes to are at most WO_MAX_SUBSCRIPTION_BYTES in all.
 */
import type { Settings } from "../../support/config.ts"
import { SubscriptionBytesFull, SubscriptionsFull } from "./session-caps.ts"
import { invalidParams, type RpcError } from "./protocol.ts"

/** What a subscription to `uri` counts against WO_MAX_SUBSCRIPTION_BYTES: its UTF-8 bytes. */
export const uriBytes = (uri: string): number => Buffer.byteLength(uri, "utf8")

/** The refusal of a URI past WO_MAX_URI_LENGTH, or undefined. The message does not echo the URI. */
export const uriTooLong = (uri: string, settings: Pick<Settings, "maxUriLength">): RpcError | undefined => {
  const max = settings.maxUriLength
  // A string's UTF-8 bytes are never fewer than its UTF-16 units: the length alone settles a long one.
  return uri.length > max || uriBytes(uri) > max ? invalidParams(`uri is longer than ${max} bytes (WO_MAX_URI_LENGTH=${max})`) : undefined
}

/** The refusal of subscriptions whose URIs would hold more than WO_MAX_SUBSCRIPTION_BYTES in all. */
export const tooManySubscriptionBytes = (settings: Pick<Settings, "maxSubscriptionBytes">, holder: "session" | "listen"): RpcError => {
  const max = settings.maxSubscriptionBytes
  return invalidParams(
    `${holder === "session" ? "the subscriptions of this session" : "resourceSubscriptions"} would hold more than ${max} bytes of URIs (WO_MAX_SUBSCRIPTION_BYTES=${max})`
  )
}

/**
 * The one check of a subscription holder's caps, given what it would hold: `count` subscriptions (against
 * WO_MAX_SUBSCRIPTIONS) whose URIs are `bytes` long in all (WO_MAX_SUBSCRIPTION_BYTES). Undefined: within both.
 */
export const overSubscriptionCaps = (
  count: number,
  bytes: number,
  settings: Pick<Settings, "maxSubscriptions" | "maxSubscriptionBytes">
): SubscriptionsFull | SubscriptionBytesFull | undefined =>
  count > settings.maxSubscriptions ? new SubscriptionsFull() : bytes > settings.maxSubscriptionBytes ? new SubscriptionBytesFull() : undefined
