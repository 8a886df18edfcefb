/**
 * The legacy era's policy (2025-03-26 .. 2025-11-25), with sessions: `initialize` needs none and mints one (the
 * dispatcher's handler); every other message must name a live session (malformed when missing, an unknown session,
 * the store's error when it is down) and a supported MCP-Protocol-Version (absent: 2025-03-26; unsupported:
 * malformed), and is served as the session's negotiated version whatever supported version it named. Results go out
 * as they are; resource not found is -32002. The transport gives each refusal its HTTP status.
 */
import { Effect, Either } from "effect"
import type { CallContext, Failure } from "./dispatcher.ts"
import { answered, malformed, storeDown, unavailable, type Envelope, type EraPolicy, type Refusal } from "./era-policy.ts"
import {
  DEFAULT_LEGACY_HEADER_VERSION,
  ErrorCode,
  invalidRequest,
  isLegacyVersion,
  LATEST_LEGACY,
  LEGACY_VERSIONS,
  Method,
  PRIMING_SINCE,
  RpcError
} from "./protocol.ts"
import type { Session, SessionsShape } from "./sessions.ts"

export interface LegacyPolicy extends EraPolicy {
  /** The live session an envelope names (GET and DELETE /mcp use it too). */
  readonly session: (envelope: Envelope) => Effect.Effect<Session, Refusal>
}

export const makeLegacyPolicy = (sessions: SessionsShape): LegacyPolicy => {
  const noSessionId = malformed(invalidRequest("Bad Request: Mcp-Session-Id header is required (send initialize first)"))
  const unknownSession: Refusal = { _tag: "UnknownSession", error: invalidRequest("Session not found: it expired or was terminated; initialize again") }

  /** The live session an envelope names, then `then` of it, as one step after the lookup (bench: MCP get, legacy). */
  const withSession = <A>(sessionId: string, then: (s: Session) => Either.Either<A, Refusal>): Effect.Effect<A, Refusal> =>
    Effect.matchEffect(sessions.get(sessionId), {
      onFailure: (e) => Effect.fail(storeDown(e)),
      onSuccess: (s) => (s === undefined ? Effect.fail(unknownSession) : then(s))
    })

  const session = ({ sessionId }: Envelope): Effect.Effect<Session, Refusal> =>
    sessionId === undefined ? Effect.fail(noSessionId) : withSession(sessionId, Either.right)

  /** The session, then the version header (in that order: a client without a session is told so first). */
  const admitted = <A>(envelope: Envelope, f: (s: Session) => A): Either.Either<A, Refusal> | Effect.Effect<A, Refusal> => {
    const { sessionId } = envelope
    if (sessionId === undefined) return Either.left(noSessionId)
    const version = envelope.protocolVersion ?? DEFAULT_LEGACY_HEADER_VERSION
    const checked = (s: Session) =>
      isLegacyVersion(version)
        ? Either.right(f(s))
        : Either.left(malformed(invalidRequest(`Unsupported MCP-Protocol-Version: ${version} (supported: ${LEGACY_VERSIONS.join(", ")})`)))
    if (sessions.getHere === undefined) return withSession(sessionId, checked)
    const s = sessions.getHere(sessionId)
    return s === undefined ? Either.left(unknownSession) : checked(s)
  }

  const refuse = (failure: Failure): Refusal => {
    switch (failure._tag) {
      case "ResourceMissing":
        return answered(new RpcError({ code: ErrorCode.ResourceNotFound, message: `Resource not found: ${failure.uri}`, data: { uri: failure.uri } }))
      case "RpcError":
        return answered(failure)
      default:
        return unavailable(failure)
    }
  }

  return {
    era: "legacy",
    session,
    admit: (request, envelope) =>
      request.method === Method.initialize
        ? Either.right<CallContext>({ era: "legacy", version: LATEST_LEGACY, meta: envelope.meta, client: envelope.client, principal: envelope.principal })
        : admitted(envelope, (s): CallContext => ({ era: "legacy", version: s.version, session: s, meta: envelope.meta, client: envelope.client, principal: envelope.principal })),
    admitNotice: (envelope) => Effect.asVoid(admitted(envelope, () => undefined)),
    decorate: (outcome) => outcome,
    refuse,
    // POST SSE events carry ids, so a client can resume; 2025-11-25 opens the stream with a priming event.
    streamShape: (context) => ({ eventIds: true, priming: context.version >= PRIMING_SINCE })
  }
}
