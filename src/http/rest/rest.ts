/**
 * The REST routes: `/api/<type>`, `/api/<type>/:id`, `/api/<type>/:id/<method>`. Only exposed operations are
 * routed; a path with other exposed operations answers 405 with `Allow`, anything else 404. Every error is JSON.
 */
import { Cause, Effect, Either, Exit } from "effect"
import type { Row } from "../../domain/catalog.ts"
import type { CompiledApp, CompiledType } from "../../domain/compile.ts"
import { NotFound, STORE_UNAVAILABLE, storeErrorPolicy, type CommandError, type StoreError, type ValidationFailed } from "../../domain/errors.ts"
import type { Command, CommandsShape, Committed, ExecuteOptions } from "../../commands/commands.ts"
import { NOT_HELD, type NotHeld, type QueriesShape } from "../../projections/queries.ts"
import { errorJson, jsonText, safeDecode, type EdgeRequest, type EdgeResponse } from "../edge/edge-types.ts"
import type { DirectRespond, DirectRoute } from "../edge/edge.ts"
import { describeBodyProblem, isJsonContentType, parseInputBody, type InputBody } from "../edge/json-body.ts"
import { deletedBody, listBody } from "./bodies.ts"
import { fromQueryString } from "../../domain/list-request.ts"
import { commandBody } from "./command-body.ts"
import { IDEMPOTENCY_KEY_HEADER, keyProblem, REPLAYED_HEADER, scopedKey } from "../../commands/idempotency.ts"
import { noCancel } from "../../support/no-cancel.ts"
import { answerExit as answerWriterExit } from "../../commands/exit-answer.ts"
import { etagOf, RowAnswers } from "./row-answers.ts"
import { REST, restActorOf } from "../../domain/actor.ts"
import { historyBody, type HistoryShape } from "../../projections/history.ts"

/** The last segment of a row's history route, `/api/<type>/<id>/history`. */
const HISTORY = "history"

const API_PREFIX = "/api/"

/** App commands (commands across entity types): `POST /api/_commands/<name>` (see command-body.ts). */
export const COMMANDS_PREFIX = "/api/_commands/"


/** The status and JSON body for a command or read failure. `ifMatch`: the version came from If-Match. */
export const errorResponse = (error: CommandError | NotFound | ValidationFailed, ifMatch = false): EdgeResponse => {
  switch (error._tag) {
    case "ValidationFailed":
      // At most MAX_ISSUES issues (errors.ts); `omitted` counts the others, as the message's "… and N more" does.
      return errorJson(400, error._tag, error.message, { issues: error.issues, ...(error.omitted ? { omitted: error.omitted } : {}) })
    case "NotFound":
      return errorJson(404, error._tag, error.message)
    case "VersionConflict":
      return errorJson(ifMatch ? 412 : 409, error._tag, error.message, { expected: error.expected, actual: error.actual })
    case "Rejected":
      return errorJson(422, error._tag, error.message, { code: error.code })
    case "MethodFailed":
      return errorJson(500, error._tag, error.message)
    case "IdempotencyKeyReused":
      return errorJson(422, error._tag, error.message, { key: error.key })
    default:
      return storeErrorResponse(error)
  }
}

/** A store error as STORE_ERRORS says: its status, Retry-After when a retry can help, named `StoreUnavailable`. */
const storeErrorResponse = (error: StoreError): EdgeResponse => {
  const { status, retryAfter } = storeErrorPolicy(error)
  return errorJson(status, STORE_UNAVAILABLE, error.message, {}, retryAfter === undefined ? {} : { "retry-after": String(retryAfter) })
}

const NO_BODY: InputBody = { input: undefined, keysLeftOut: 0 }

/** `Idempotent-Replayed: true` on an answer given again for a retried idempotency key. */
const replayHeader = (replayed: boolean | undefined): Record<string, string> => (replayed ? { [REPLAYED_HEADER]: "true" } : {})

/**
 * A committed row, answered with the serialisation the store already made. Every write answers with this: its
 * headers in one object literal with its Content-Length, so the edge writes them as they are (no copy: edge.ts).
 */
const committedRow = (status: number, c: Committed, location?: string): EdgeResponse => {
  const body = c.rowJson ?? JSON.stringify(c.row)
  const length = String(Buffer.byteLength(body))
  const headers: Record<string, string> = location === undefined
    ? { "content-type": "application/json", etag: etagOf(c.row!), "content-length": length }
    : { "content-type": "application/json", etag: etagOf(c.row!), location, "content-length": length }
  if (c.replayed) headers[REPLAYED_HEADER] = "true"
  return { _tag: "Buffered", status, headers, body }
}

/** If-Match `"3"` or `3` -> 3; Left when present but not a version (weak tags never match, RFC 9110). */
const parseIfMatch = (value: string | undefined): Either.Either<number | undefined, string> => {
  if (value === undefined) return Either.right(undefined)
  const m = /^"?(\d{1,15})"?$/.exec(value.trim())
  return m ? Either.right(Number(m[1])) : Either.left(`If-Match must name a version such as "3", got ${value}`)
}

const methodNotAllowed = (allow: ReadonlyArray<string>) =>
  errorJson(405, "MethodNotAllowed", `allowed here: ${allow.join(", ")}`, {}, { allow: allow.join(", ") })

/**
 * Reads and validates a JSON body: 415 for another content type, 400 for bad JSON. An empty body is `{}`.
 * `accepts`: the top-level keys the command takes, when known (most others are then left unparsed: excess-keys.ts).
 * The body, or the answer that refuses it (a plain union: no wrapper per request on the write path).
 */
const readBody = (request: EdgeRequest, maxDepth: number, accepts: ReadonlySet<string> | undefined): InputBody | EdgeResponse => {
  if (request.body.length === 0) return { input: {}, keysLeftOut: 0 }
  if (!isJsonContentType(request.headers["content-type"])) {
    return errorJson(415, "UnsupportedMediaType", "send the body as Content-Type: application/json")
  }
  const parsed = parseInputBody(request.body, maxDepth, accepts, request.bodyShape)
  if (Either.isLeft(parsed)) {
    const p = parsed.left
    return errorJson(400, "InvalidJson", p._tag === "TooDeep" ? describeBodyProblem(p) : `the body is not valid JSON: ${p.message}`)
  }
  const input = parsed.right.input
  return typeof input === "object" && input !== null && !Array.isArray(input)
    ? parsed.right
    : errorJson(400, "ValidationFailed", "the body must be a JSON object", { issues: [{ path: [], message: "expected a JSON object" }] })
}

/** Whether `readBody` (or a write's plan) answered with a refusal rather than a body (or a write). */
const isResponse = (x: InputBody | RowWrite | EdgeResponse): x is EdgeResponse => "_tag" in x && x._tag !== "RowWrite"

/** Most writes send no key: one shared answer for them (no allocation per request on the direct path). */
const NO_KEY: Either.Either<string | undefined, EdgeResponse> = Either.right(undefined)

/**
 * The request's `Idempotency-Key`, when it sends one, as its principal's key (idempotency.ts `scopedKey`): Left
 * with the 400 answer when it is not a usable key.
 */
const idempotencyKeyOf = (request: EdgeRequest): Either.Either<string | undefined, EdgeResponse> => {
  const key = request.headers[IDEMPOTENCY_KEY_HEADER]
  if (key === undefined) return NO_KEY
  const problem = keyProblem(key)
  return problem === undefined
    ? Either.right(scopedKey(request.principal?.keyScope, key as string))
    : Either.left(errorJson(400, "ValidationFailed", `Idempotency-Key: ${problem}`, { issues: [{ path: ["Idempotency-Key"], message: problem }] }))
}

/** The row writes REST routes: POST on a collection, PATCH and DELETE on an item, POST on an exposed method. */
type WriteKind = "create" | "update" | "delete" | "invoke"

/** A row write a route asks for: the command, the keys its body left unparsed, whether its version came from If-Match. */
interface RowWrite {
  readonly _tag: "RowWrite"
  readonly kind: WriteKind
  readonly command: Command
  readonly keysLeftOut: number
  readonly ifMatch: boolean
}

/** A row write ready to run, or the answer that refuses the request before it (bad body, If-Match). */
type PlannedWrite = RowWrite | EdgeResponse

/** The type and path segments an `/api/<type>[/<id>[/<method>]]` path names, or undefined (404). */
const targetOf = (catalog: CompiledApp, path: string) => {
  // Segments cut with indexOf: `split("/")` goes to V8's runtime on every request (bench/profile-core.ts set_price).
  const parts: Array<string> = []
  for (let from = API_PREFIX.length; ;) {
    const slash = path.indexOf("/", from)
    const end = slash === -1 ? path.length : slash
    // An empty segment, or a fourth one: no route.
    if (end === from || parts.length === 3) return undefined
    const part = path.slice(from, end)
    parts.push(part.includes("%") ? safeDecode(part) : part)
    if (slash === -1) break
    from = slash + 1
  }
  const type = catalog.types.get(parts[0])
  return type === undefined ? undefined : { type, parts }
}

const exposesMethod = (type: CompiledType, name: string) => type.methods.has(name) && type.rest.has(name)

/** The row write `verb` asks for on a path of `parts` (1 to 3 segments), or undefined when it asks for none. */
const writeOf = (type: CompiledType, parts: ReadonlyArray<string>, verb: string): WriteKind | undefined => {
  switch (parts.length) {
    case 1:
      return verb === "POST" && type.rest.has("create") ? "create" : undefined
    case 2:
      return verb === "PATCH" && type.rest.has("update") ? "update" : verb === "DELETE" && type.rest.has("delete") ? "delete" : undefined
    default:
      return verb === "POST" && exposesMethod(type, parts[2]) ? "invoke" : undefined
  }
}

/** The answer to a committed row write. */
const answerOf = (write: RowWrite, c: Committed): EdgeResponse => {
  switch (write.kind) {
    case "create":
      return committedRow(201, c, `/api/${write.command.type}/${c.event.id}`)
    case "delete":
      return jsonText(200, JSON.stringify(deletedBody(c.event)), replayHeader(c.replayed))
    default:
      return committedRow(200, c)
  }
}

export const makeRestRoutes = (catalog: CompiledApp, commands: CommandsShape, queries: QueriesShape, maxJsonDepth: number, history?: HistoryShape) => {
  const rowAnswers = new RowAnswers()
  /** Runs a write with the request's idempotency key, if any (a bad key is 400, nothing done). */
  const withKey = (request: EdgeRequest, keysLeftOut: number, f: (options: ExecuteOptions) => Effect.Effect<EdgeResponse>) =>
    Either.match(idempotencyKeyOf(request), {
      onLeft: Effect.succeed,
      onRight: (key) => f(writeOptions(request, key, keysLeftOut))
    })

  /** A planned write run on a fiber (the generic way: an edge without the direct route, as a recorded server or `wo dev`). */
  const run = (request: EdgeRequest, planned: PlannedWrite): Effect.Effect<EdgeResponse> =>
    isResponse(planned)
      ? Effect.succeed(planned)
      : withKey(request, planned.keysLeftOut, (options) =>
        commands.execute(planned.command, options).pipe(
          Effect.match({ onFailure: (e) => errorResponse(e, planned.ifMatch), onSuccess: (c) => answerOf(planned, c) })
        ))

  /**
   * The command a row write asks for, read from the request: its body (decoders name the keys they take: codecs.ts)
   * and its If-Match version; or the answer that refuses it.
   */
  const planWrite = (kind: WriteKind, type: CompiledType, parts: ReadonlyArray<string>, request: EdgeRequest): PlannedWrite => {
    let expectedVersion: number | undefined
    if (kind !== "create") {
      const ifMatch = parseIfMatch(request.headers["if-match"] as string | undefined)
      if (Either.isLeft(ifMatch)) return errorJson(400, "ValidationFailed", ifMatch.left, { issues: [{ path: ["If-Match"], message: ifMatch.left }] })
      expectedVersion = ifMatch.right
    }
    const accepts = kind === "create"
      ? type.decodeCreate.accepts
      : kind === "update"
      ? type.decodePatch.accepts
      : kind === "invoke"
      ? type.methods.get(parts[2])!.decodeParams.accepts
      : undefined
    const body = kind === "delete" ? NO_BODY : readBody(request, maxJsonDepth, accepts)
    if (isResponse(body)) return body
    const command: Command = kind === "create"
      ? { _tag: "Create", type: type.name, input: body.input }
      : kind === "update"
      ? { _tag: "Update", type: type.name, id: parts[1], expectedVersion, input: body.input }
      : kind === "delete"
      ? { _tag: "Delete", type: type.name, id: parts[1], expectedVersion }
      : { _tag: "Invoke", type: type.name, id: parts[1], method: parts[2], expectedVersion, input: body.input }
    return { _tag: "RowWrite", kind, command, keysLeftOut: body.keysLeftOut, ifMatch: expectedVersion !== undefined }
  }

  /** GET or 405 on a collection (its writes are routed before: `writeOf`). */
  const collection = (type: CompiledType, request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    if (request.method === "GET" && type.rest.has("list")) {
      // `?status=published&order=-title&limit=&cursor=`: filters and order checked against the catalog.
      return Either.match(fromQueryString(type, request.search ?? request.query.toString()), {
        onLeft: (e) => Effect.succeed(errorResponse(e)),
        onRight: (list) =>
          queries.list(type.name, list).pipe(
            Effect.match({
              onFailure: errorResponse,
              onSuccess: (page) => jsonText(200, listBody(page))
            })
          )
      })
    }
    const allow = [type.rest.has("list") && "GET", type.rest.has("create") && "POST"].filter((x): x is string => !!x)
    return Effect.succeed(allow.length ? methodNotAllowed(allow) : notFound(request))
  }

  /** GET or 405 on an item (its writes are routed before: `writeOf`). */
  const item = (type: CompiledType, id: string, request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    if (request.method === "GET" && type.rest.has("get")) {
      return queries.get(type.name, id).pipe(Effect.match({ onFailure: errorResponse, onSuccess: (row) => rowAnswers.answer(row) }))
    }
    const allow = [type.rest.has("get") && "GET", type.rest.has("update") && "PATCH", type.rest.has("delete") && "DELETE"]
      .filter((x): x is string => !!x)
    return Effect.succeed(allow.length ? methodNotAllowed(allow) : notFound(request))
  }

  /** `GET /api/<type>/<id>/history?cursor=&limit=`: the row's events, oldest first (projections/history.ts). */
  const rowHistory = (type: CompiledType, id: string, request: EdgeRequest, history: HistoryShape): Effect.Effect<EdgeResponse> => {
    const cursor = request.query.get("cursor") ?? undefined
    const limit = request.query.get("limit")
    return history.page(type.name, id, { cursor, ...(limit === null ? {} : { limit: Number(limit) }) }).pipe(
      Effect.match({ onFailure: errorResponse, onSuccess: (page) => jsonText(200, historyBody(page)) })
    )
  }

  /** 404 or 405 on a method path (a POST on an exposed method is a write: `writeOf`). */
  const method = (type: CompiledType, name: string, request: EdgeRequest): EdgeResponse =>
    exposesMethod(type, name) ? methodNotAllowed(["POST"]) : notFound(request)

  /** `POST /api/_commands/<name>`: 200 with every change, 422 refused, 400 bad params, 404 no such command. */
  const appCommand = (name: string, request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    const command = catalog.commands.get(name)
    if (command === undefined || !command.rest) return Effect.succeed(notFound(request))
    if (request.method !== "POST") return Effect.succeed(methodNotAllowed(["POST"]))
    const body = readBody(request, maxJsonDepth, command.decodeParams.accepts)
    if (isResponse(body)) return Effect.succeed(body)
    return withKey(request, body.keysLeftOut, (options) =>
      commands.executeAppCommand(name, body.input, options).pipe(
        Effect.match({ onFailure: (e) => errorResponse(e), onSuccess: (c) => jsonText(200, commandBody(c), replayHeader(c.replayed)) })
      ))
  }

  /**
   * `GET /api/<type>/<id>` without a fiber, answered at once (the row is read synchronously, through the row cache),
   * as `item` answers it; any other read goes the generic way. A store failure is a defect there too (500, logged).
   */
  const readNow: DirectRoute = (request, respond) => {
    const target = targetOf(catalog, request.path)
    if (target === undefined || target.parts.length !== 2 || !target.type.rest.has("get")) return undefined
    const type = target.type.name
    const id = target.parts[1]
    let row: Row | undefined | NotHeld
    try {
      row = queries.row(type, id)
    } catch (e) {
      respond.failed(Cause.die(e))
      return noCancel
    }
    // A row a node caching the PostgreSQL store does not hold is read the generic way: the fiber awaits the store.
    if (row === NOT_HELD) return undefined
    respond.answer(row === undefined ? errorResponse(new NotFound({ type, id })) : rowAnswers.answer(row))
    return noCancel
  }

  // The row writes without a fiber per request (edge.ts, DirectRoute), hand-tuned (bench/profile-core.ts create: a
  // fiber per request, its run loop and its resumption by the writer are the largest share of a durable write's CPU
  // after the store itself). Both ways route through `writeOf`, plan through `planWrite` and answer through
  // `answerOf` and `errorResponse`, and take the Idempotency-Key through `idempotencyKeyOf` (a keyed write waits on
  // its key's earlier attempt by a callback, not a fiber: idempotency.ts; a fiber and a Deferred per key would cost most
  // of what a key costs, bench/idempotency.ts). App commands too (`commandNow`: bench/scenarios/commands.ts, the fiber
  // is the largest difference between a lend's CPU and a set_price's in bench/profile-lend.ts).
  const direct: DirectRoute = (request, respond) => {
    if (request.method === "GET") return readNow(request, respond)
    if (request.path.startsWith(COMMANDS_PREFIX)) return commandNow(request, respond)
    const target = targetOf(catalog, request.path)
    if (target === undefined) return undefined
    const kind = writeOf(target.type, target.parts, request.method)
    if (kind === undefined) return undefined
    const write = planWrite(kind, target.type, target.parts, request)
    if (isResponse(write)) {
      respond.answer(write)
      return noCancel
    }
    const key = idempotencyKeyOf(request)
    if (Either.isLeft(key)) {
      respond.answer(key.left)
      return noCancel
    }
    return commands.executeNow(write.command, writeOptions(request, key.right, write.keysLeftOut), answerExit(respond, (c) => answerOf(write, c), write.ifMatch))
  }

  /** `POST /api/_commands/<name>` the direct way, answered as `appCommand` answers it; anything else goes the generic way. */
  const commandNow: DirectRoute = (request, respond) => {
    const segment = request.path.slice(COMMANDS_PREFIX.length)
    // Command names are [a-z0-9_]: nothing to decode unless escaped (decodeURIComponent's try cost per call).
    const name = segment.includes("%") ? safeDecode(segment) : segment
    const command = catalog.commands.get(name)
    if (request.method !== "POST" || command === undefined || !command.rest) return undefined
    const body = readBody(request, maxJsonDepth, command.decodeParams.accepts)
    if (isResponse(body)) {
      respond.answer(body)
      return noCancel
    }
    const key = idempotencyKeyOf(request)
    if (Either.isLeft(key)) {
      respond.answer(key.left)
      return noCancel
    }
    return commands.executeAppCommandNow(name, body.input, writeOptions(request, key.right, body.keysLeftOut), answerExit(respond, (c) => jsonText(200, commandBody(c), replayHeader(c.replayed))))
  }

  /** Routes a request whose path starts with /api/. */
  const routes = (request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    if (request.path.startsWith(COMMANDS_PREFIX)) return appCommand(safeDecode(request.path.slice(COMMANDS_PREFIX.length)), request)
    const target = targetOf(catalog, request.path)
    if (target === undefined) return Effect.succeed(notFound(request))
    const { type, parts } = target
    const kind = writeOf(type, parts, request.method)
    if (kind !== undefined) return run(request, planWrite(kind, type, parts, request))
    if (parts.length === 1) return collection(type, request)
    if (parts.length === 2) return item(type, parts[1], request)
    if (parts.length === 3 && parts[2] === HISTORY && request.method === "GET" && history !== undefined && type.rest.has("get")) return rowHistory(type, parts[1], request, history)
    return Effect.succeed(method(type, parts[2], request))
  }
  return Object.assign(routes, { direct })
}

/**
 * The writer's answer to a direct write, turned into the response as the generic route would (`ok` for a success,
 * `errorResponse` for a refusal, a defect answered as a failed fiber is: edge.ts). Called inside the writer's batch:
 * nothing may throw into it.
 */
const answerExit = <A>(respond: DirectRespond, ok: (a: A) => EdgeResponse, ifMatch = false) => (exit: Exit.Exit<A, CommandError>) =>
  answerWriterExit(exit, ok, (error) => errorResponse(error, ifMatch), (response) => respond.answer(response), (cause) => respond.failed(cause))

/** The options of most REST writes (no principal, no key, nothing left out): one shared object, nothing per request. */
const REST_OPTIONS: ExecuteOptions = { actor: REST }

/**
 * A write's options: who asks (the request's principal, through REST), its idempotency key, if it sent one, and the
 * keys its body left unparsed.
 */
const writeOptions = (request: EdgeRequest, key: string | undefined, keysLeftOut: number): ExecuteOptions => {
  const actor = restActorOf(request.principal)
  if (key === undefined) return keysLeftOut > 0 ? { actor, keysLeftOut } : actor === REST ? REST_OPTIONS : { actor }
  return keysLeftOut > 0 ? { idempotencyKey: key, keysLeftOut, actor } : { idempotencyKey: key, actor }
}

export const notFound = (request: EdgeRequest) => errorJson(404, "NotFound", `no route for ${request.method} ${request.path}`)
