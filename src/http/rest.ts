/**
 * The REST routes: `/api/<type>`, `/api/<type>/:id`, `/api/<type>/:id/<method>`. Only exposed operations are
 * routed; a path with other exposed operations answers 405 with `Allow`, anything else 404. Every error is JSON.
 */
import { Cause, Effect, Either, Exit, Option } from "effect"
import type { Row } from "../domain/catalog.ts"
import type { CompiledApp, CompiledType } from "../domain/compile.ts"
import { STORE_UNAVAILABLE, storeErrorPolicy, type CommandError, type NotFound, type StoreError, type ValidationFailed } from "../domain/errors.ts"
import type { Command, CommandsShape, Committed, ExecuteOptions } from "../commands/commands.ts"
import type { QueriesShape } from "../projections/queries.ts"
import { errorJson, jsonText, safeDecode, type EdgeRequest, type EdgeResponse } from "./edge-types.ts"
import type { DirectRoute } from "./edge.ts"
import { describeBodyProblem, isJsonContentType, parseInputBody, type InputBody } from "./json-body.ts"
import { deletedBody, listBody } from "./bodies.ts"
import { fromQueryString } from "../domain/list-request.ts"
import { commandBody } from "./command-body.ts"
import { IDEMPOTENCY_KEY_HEADER, keyProblem, REPLAYED_HEADER } from "../commands/idempotency.ts"

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

const etag = (row: Row) => `"${row.version}"`

const rowResponse = (status: number, row: Row) => jsonText(status, JSON.stringify(row), { etag: etag(row) })

/** `Idempotent-Replayed: true` on an answer given again for a retried idempotency key. */
const replayHeader = (replayed: boolean | undefined): Record<string, string> => (replayed ? { [REPLAYED_HEADER]: "true" } : {})

/** A committed row, answered with the serialisation the store already made. */
const committedRow = (status: number, c: Committed, location?: string): EdgeResponse => {
  // Every write answers with this: its headers in one object (no spreads), in rowResponse's order.
  const headers: Record<string, string> = { "content-type": "application/json", etag: etag(c.row!) }
  if (location !== undefined) headers.location = location
  if (c.replayed) headers[REPLAYED_HEADER] = "true"
  return { _tag: "Buffered", status, headers, body: c.rowJson ?? JSON.stringify(c.row) }
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
 */
const readBody = (request: EdgeRequest, maxDepth: number, accepts: ReadonlySet<string> | undefined): Either.Either<InputBody, EdgeResponse> => {
  if (request.body.length === 0) return Either.right({ input: {}, keysLeftOut: 0 })
  if (!isJsonContentType(request.headers["content-type"])) {
    return Either.left(errorJson(415, "UnsupportedMediaType", "send the body as Content-Type: application/json"))
  }
  return Either.flatMap(
    Either.mapLeft(parseInputBody(request.body, maxDepth, accepts), (p) =>
      errorJson(400, "InvalidJson", p._tag === "TooDeep" ? describeBodyProblem(p) : `the body is not valid JSON: ${p.message}`)),
    (body) => typeof body.input === "object" && body.input !== null && !Array.isArray(body.input)
      ? Either.right(body)
      : Either.left(errorJson(400, "ValidationFailed", "the body must be a JSON object", { issues: [{ path: [], message: "expected a JSON object" }] }))
  )
}

/** The request's `Idempotency-Key`, when it sends one: Left with the 400 answer when it is not a usable key. */
const idempotencyKeyOf = (request: EdgeRequest): Either.Either<string | undefined, EdgeResponse> => {
  const key = request.headers[IDEMPOTENCY_KEY_HEADER]
  if (key === undefined) return Either.right(undefined)
  const problem = keyProblem(key)
  return problem === undefined
    ? Either.right(key as string)
    : Either.left(errorJson(400, "ValidationFailed", `Idempotency-Key: ${problem}`, { issues: [{ path: ["Idempotency-Key"], message: problem }] }))
}

/** A row write a route asks for: the command, its body, whether its version came from If-Match, its answer. */
interface RowWrite {
  readonly command: Command
  readonly body: InputBody
  readonly ifMatch: boolean
  readonly onSuccess: (c: Committed) => EdgeResponse
}

/** A row write ready to run, or the answer that refuses the request before it (bad body, If-Match). */
type PlannedWrite = Either.Either<RowWrite, EdgeResponse>

/** The type and path segments an `/api/<type>[/<id>[/<method>]]` path names, or undefined (404). */
const targetOf = (catalog: CompiledApp, path: string) => {
  const parts = path.slice("/api/".length).split("/")
  if (parts.length > 3) return undefined
  for (let i = 0; i < parts.length; i++) {
    if (parts[i] === "") return undefined
    if (parts[i].includes("%")) parts[i] = safeDecode(parts[i])
  }
  const type = catalog.types.get(parts[0])
  return type === undefined ? undefined : { type, parts }
}

export const makeRestRoutes = (catalog: CompiledApp, commands: CommandsShape, queries: QueriesShape, maxJsonDepth: number) => {
  /** Runs a write with the request's idempotency key, if any (a bad key is 400, nothing done). */
  const withKey = (request: EdgeRequest, body: InputBody, f: (options: ExecuteOptions) => Effect.Effect<EdgeResponse>) =>
    Either.match(idempotencyKeyOf(request), {
      onLeft: Effect.succeed,
      onRight: (key) => f({ ...(key === undefined ? {} : { idempotencyKey: key }), ...optionsOf(body) })
    })

  const run = (request: EdgeRequest, planned: PlannedWrite) =>
    Either.match(planned, {
      onLeft: Effect.succeed,
      onRight: (write) =>
        withKey(request, write.body, (options) =>
          commands.execute(write.command, options).pipe(Effect.match({ onFailure: (e) => errorResponse(e, write.ifMatch), onSuccess: write.onSuccess })))
    })

  /** The request's body parsed for a command that takes `accepts` (decoders name theirs: codecs.ts). */
  const withBody = (request: EdgeRequest, accepts: ReadonlySet<string> | undefined, f: (body: InputBody) => RowWrite): PlannedWrite =>
    Either.map(readBody(request, maxJsonDepth, accepts), f)

  const withVersion = (request: EdgeRequest, f: (expected: number | undefined) => PlannedWrite): PlannedWrite =>
    Either.flatMap(
      Either.mapLeft(parseIfMatch(request.headers["if-match"] as string | undefined), (m) =>
        errorJson(400, "ValidationFailed", m, { issues: [{ path: ["If-Match"], message: m }] })),
      f
    )

  const createWrite = (type: CompiledType, request: EdgeRequest) =>
    withBody(request, type.decodeCreate.accepts, (body) => ({
      command: { _tag: "Create", type: type.name, input: body.input },
      body,
      ifMatch: false,
      onSuccess: (c) => committedRow(201, c, `/api/${type.name}/${c.event.id}`)
    }))

  const updateWrite = (type: CompiledType, id: string, request: EdgeRequest) =>
    withVersion(request, (expectedVersion) =>
      withBody(request, type.decodePatch.accepts, (body) => ({
        command: { _tag: "Update", type: type.name, id, expectedVersion, input: body.input },
        body,
        ifMatch: expectedVersion !== undefined,
        onSuccess: (c) => committedRow(200, c)
      })))

  const deleteWrite = (type: CompiledType, id: string, request: EdgeRequest) =>
    withVersion(request, (expectedVersion) =>
      Either.right({
        command: { _tag: "Delete", type: type.name, id, expectedVersion },
        body: NO_BODY,
        ifMatch: expectedVersion !== undefined,
        onSuccess: (c) => jsonText(200, JSON.stringify(deletedBody(c.event)), replayHeader(c.replayed))
      }))

  /** Only for an exposed method (the caller checks `exposesMethod`). */
  const invokeWrite = (type: CompiledType, id: string, name: string, request: EdgeRequest) =>
    withVersion(request, (expectedVersion) =>
      withBody(request, type.methods.get(name)!.decodeParams.accepts, (body) => ({
        command: { _tag: "Invoke", type: type.name, id, method: name, expectedVersion, input: body.input },
        body,
        ifMatch: expectedVersion !== undefined,
        onSuccess: (c) => committedRow(200, c)
      })))

  const exposesMethod = (type: CompiledType, name: string) => type.methods.has(name) && type.rest.has(name)

  const collection = (type: CompiledType, request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    const allow = [type.rest.has("list") && "GET", type.rest.has("create") && "POST"].filter((x): x is string => !!x)
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
    if (request.method === "POST" && type.rest.has("create")) return run(request, createWrite(type, request))
    return Effect.succeed(allow.length ? methodNotAllowed(allow) : notFound(request))
  }

  const item = (type: CompiledType, id: string, request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    const allow = [type.rest.has("get") && "GET", type.rest.has("update") && "PATCH", type.rest.has("delete") && "DELETE"]
      .filter((x): x is string => !!x)
    if (request.method === "GET" && type.rest.has("get")) {
      return queries.get(type.name, id).pipe(Effect.match({ onFailure: errorResponse, onSuccess: (row) => rowResponse(200, row) }))
    }
    if (request.method === "PATCH" && type.rest.has("update")) return run(request, updateWrite(type, id, request))
    if (request.method === "DELETE" && type.rest.has("delete")) return run(request, deleteWrite(type, id, request))
    return Effect.succeed(allow.length ? methodNotAllowed(allow) : notFound(request))
  }

  const method = (type: CompiledType, id: string, name: string, request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    if (!exposesMethod(type, name)) return Effect.succeed(notFound(request))
    if (request.method !== "POST") return Effect.succeed(methodNotAllowed(["POST"]))
    return run(request, invokeWrite(type, id, name, request))
  }

  /** `POST /api/_commands/<name>`: 200 with every change, 422 refused, 400 bad params, 404 no such command. */
  const appCommand = (name: string, request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    const command = catalog.commands.get(name)
    if (command === undefined || !command.rest) return Effect.succeed(notFound(request))
    if (request.method !== "POST") return Effect.succeed(methodNotAllowed(["POST"]))
    return Either.match(readBody(request, maxJsonDepth, command.decodeParams.accepts), {
      onLeft: Effect.succeed,
      onRight: (body) =>
        withKey(request, body, (options) =>
          commands.executeAppCommand(name, body.input, options).pipe(
            Effect.match({ onFailure: (e) => errorResponse(e), onSuccess: (c) => jsonText(200, commandBody(c), replayHeader(c.replayed)) })
          ))
    })
  }

  /** The row write a request on the direct path asks for, or undefined when it is none (the generic routes take it). */
  const directWrite = (request: EdgeRequest): PlannedWrite | undefined => {
    const target = targetOf(catalog, request.path)
    if (target === undefined) return undefined
    const { type, parts } = target
    switch (parts.length) {
      case 1:
        return request.method === "POST" && type.rest.has("create") ? createWrite(type, request) : undefined
      case 2:
        return request.method === "PATCH" && type.rest.has("update")
          ? updateWrite(type, parts[1], request)
          : request.method === "DELETE" && type.rest.has("delete")
          ? deleteWrite(type, parts[1], request)
          : undefined
      default:
        return request.method === "POST" && exposesMethod(type, parts[2]) ? invokeWrite(type, parts[1], parts[2], request) : undefined
    }
  }

  // The row writes without a fiber per request (edge.ts, DirectRoute), hand-tuned (bench/profile-core.ts create: a
  // fiber per request, its run loop and its resumption by the writer were the largest share of a durable write's CPU
  // after the store itself). Both ways build the same command through the same plans and answer through the same
  // `errorResponse`; a request with an Idempotency-Key goes the generic way (it may wait on its key's earlier attempt).
  const direct: DirectRoute = (request, respond) => {
    if (request.headers[IDEMPOTENCY_KEY_HEADER] !== undefined) return undefined
    const planned = directWrite(request)
    if (planned === undefined) return undefined
    if (Either.isLeft(planned)) {
      respond.answer(planned.left)
      return noCancel
    }
    const write = planned.right
    // Called inside the writer's batch: nothing may throw into it.
    return commands.executeNow(write.command, optionsOf(write.body), (exit) => {
      let response: EdgeResponse
      try {
        if (Exit.isSuccess(exit)) response = write.onSuccess(exit.value)
        else {
          const error = Cause.failureOption(exit.cause)
          // A defect is answered as the generic path's failed fiber is (edge.ts).
          if (Option.isNone(error)) return respond.failed(exit.cause)
          response = errorResponse(error.value, write.ifMatch)
        }
      } catch (e) {
        return respond.failed(Cause.die(e))
      }
      respond.answer(response)
    })
  }

  /** Routes a request whose path starts with /api/. */
  const routes = (request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    if (request.path.startsWith(COMMANDS_PREFIX)) return appCommand(safeDecode(request.path.slice(COMMANDS_PREFIX.length)), request)
    const target = targetOf(catalog, request.path)
    if (target === undefined) return Effect.succeed(notFound(request))
    const { type, parts } = target
    if (parts.length === 1) return collection(type, request)
    if (parts.length === 2) return item(type, parts[1], request)
    return method(type, parts[1], parts[2], request)
  }
  return Object.assign(routes, { direct })
}

const noCancel = () => {}

/** What the surface tells the command about its body: the keys it counted but left unparsed. */
const optionsOf = (body: InputBody): ExecuteOptions | undefined => (body.keysLeftOut > 0 ? { keysLeftOut: body.keysLeftOut } : undefined)

export const notFound = (request: EdgeRequest) => errorJson(404, "NotFound", `no route for ${request.method} ${request.path}`)
