/**
 * Who a request acts as: a principal named in the access file, the one `WO_AUTH_TOKEN` holder, or an OAuth
 * client. The edge authenticates each request and attaches its principal; everything behind the edge reads it
 * from the request, never from the token again.
 */
export interface Principal {
  /** The principal's declared name (an OAuth client's `client_id`). It is what events record as their actor. */
  readonly name: string
  /** The subject an OAuth client acts for (the token's `sub`), when there is one. */
  readonly onBehalfOf?: string
}
