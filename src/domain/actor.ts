/**
 * Who made an event: recorded on every event written since store format 3 (classic-level) / 8 (PostgreSQL), absent
 * on the events written before.
 *
 *   {"principal":"pricing-agent","client":{"name":"claude","version":"1.2","session":"..."},"onBehalfOf":"alice"}
 *
 *  - `principal`: the name of the principal the request was authenticated as (absent: no principal, e.g. an open
 *    loopback server);
 *  - `client`: the MCP client as it named itself (`clientInfo`: its name and version, and the legacy session id), or
 *    "rest" for the REST API, or "in-process" for a write made by the embedding program or a `wo` tool;
 *  - `onBehalfOf`: the subject the principal acts for (an OAuth token's `sub`).
 *
 * An app command's correlation id stays on the event beside `command` (events.ts): it names one execution of the
 * command, not who ran it, and it was in the log before actors were.
 */
/** Who a request acts as, as far as an event records it (the access layer's principal has this shape). */
export interface Acting {
  readonly name: string
  readonly onBehalfOf?: string
}

/** An MCP client, as its `clientInfo` names it, with the legacy session it spoke in. */
export interface McpClient {
  readonly name: string
  readonly version?: string
  readonly session?: string
}

export type ActorClient = "rest" | "in-process" | McpClient

export interface Actor {
  readonly principal?: string
  readonly client: ActorClient
  readonly onBehalfOf?: string
}

/** The actor of a write made in process (no request): the embedding program, `wo` tools. */
export const IN_PROCESS: Actor = Object.freeze({ client: "in-process" })
/** The actor of a REST write without a principal: one object shared by every such event. */
export const REST: Actor = Object.freeze({ client: "rest" })

/** The actor of a request made by `principal` (if any) through `client`; fields in the order the log stores them. */
export const actorOf = (principal: Acting | undefined, client: ActorClient): Actor => {
  if (principal === undefined) return client === "rest" ? REST : client === "in-process" ? IN_PROCESS : { client }
  return principal.onBehalfOf === undefined
    ? { principal: principal.name, client }
    : { principal: principal.name, client, onBehalfOf: principal.onBehalfOf }
}

/**
 * The actor of a REST request by `principal`: one object per principal, kept while the principal is (the edge
 * attaches the same principal object to each of its requests), so a write allocates none.
 */
const restActors = new WeakMap<Acting, Actor>()
export const restActorOf = (principal: Acting | undefined): Actor => {
  if (principal === undefined) return REST
  let actor = restActors.get(principal)
  if (actor === undefined) restActors.set(principal, (actor = actorOf(principal, "rest")))
  return actor
}

/** An MCP client from its `clientInfo` (absent: "unknown", the spec makes it required) and its legacy session. */
export const mcpClient = (info: { readonly name?: unknown; readonly version?: unknown } | undefined, session: string | undefined): McpClient => {
  const name = typeof info?.name === "string" ? info.name : "unknown"
  const version = typeof info?.version === "string" ? info.version : undefined
  return version === undefined
    ? session === undefined ? { name } : { name, session }
    : session === undefined ? { name, version } : { name, version, session }
}

/** The principal an event's actor names, if any (what `/api/_events?actor=` matches). */
export const principalOf = (event: { readonly actor?: Actor }): string | undefined => event.actor?.principal
