/**
 * What Sessions answers when a cap stops it (nothing is made then), and what it answers when it made the
 * subscription: tagged values, so the dispatcher switches on `_tag` and each cap names itself.
 */
import { Data } from "effect"

/** WO_MAX_SESSIONS sessions are open: no new one. */
export class SessionsFull extends Data.TaggedClass("SessionsFull")<{}> {}
/** The session has WO_MAX_SUBSCRIPTIONS subscriptions: no new one. */
export class SubscriptionsFull extends Data.TaggedClass("SubscriptionsFull")<{}> {}
/** The session's subscribed URIs would pass WO_MAX_SUBSCRIPTION_BYTES: not made. */
export class SubscriptionBytesFull extends Data.TaggedClass("SubscriptionBytesFull")<{}> {}
/** The subscription is made (or was already). */
export class Subscribed extends Data.TaggedClass("Subscribed")<{}> {}

export type SubscribeOutcome = Subscribed | SubscriptionsFull | SubscriptionBytesFull
