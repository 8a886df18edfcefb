/**
 * The Decider of an app command (a command across entity types, `CommandSpec` in catalog.ts), without I/O.
 *
 * `planCommand` runs the author's `decide` isolated (user-code.ts) against the rows as stored before the command,
 * and turns each change it returns into the per-entity Intent through the same Schema decode REST and MCP use
 * (`toIntent`). `decideCommand` then decides each change with the entity Decider (decider.ts): the drafts of all
 * its events, or the first refusal. The writer (group-commit.ts) decides each planned change its own way (with
 * the same checks as any single write) and appends all of a command's events, or none of them.
 *
 * Rules: at most one change per row (a second one is the author's bug); `decide` throwing or returning anything
 * but a list of changes or a `reject(...)` is a UserCodeFailure (MethodFailed naming the command); a `reject` is
 * Rejected with its code, `type` and `operation` the command's name.
 */
import { Either } from "effect"
import { isRejection, type CommandChange, type CommandContext, type Row } from "../catalog.ts"
import type { CompiledApp, CompiledType } from "../compile.ts"
import type { CompiledCommand } from "../compile-commands.ts"
import { decide, type EventDraft, type Intent } from "./decider.ts"
import { MethodFailed, type CommandError } from "../errors.ts"
import { rejectedBy } from "./rejection.ts"
import { describeThrown, issuesText, notPlainObject, plainData, runUserCode, userCodeFailure, type UserCodeFailure } from "./user-code.ts"
import { toIntent, type Command } from "./intent.ts"

/** A row as the command's reads see it: as stored before the command (undefined when there is none). */
export type RowLookup = (type: string, id: string) => Row | undefined

/** One change of a command, decoded: the entity, its id (absent for a create) and the intent. */
export interface PlannedChange {
  readonly type: CompiledType
  readonly id?: string
  readonly intent: Intent
}

/** One event a command decided: its entity, the row before it, and the draft (kind, method, params, data). */
export interface CommandEventDraft {
  readonly type: string
  readonly id: string
  readonly current: Row | undefined
  readonly draft: EventDraft
}

const TAGS = new Set(["Create", "Update", "Delete", "Invoke"])

/** The context `decide` reads rows and builds changes with. Unknown type names throw (the author's bug). */
const contextFor = (app: CompiledApp, rows: RowLookup): CommandContext<any> => ({
  get: (type: string, id: string) => {
    const t = app.types.get(type)
    if (t === undefined) throw new Error(`ctx.get: the app declares no type ${JSON.stringify(type)}`)
    const row = rows(type, String(id))
    if (row === undefined) return undefined
    // As a method sees its row: the stored fields decoded (a copy of its own: decodeStored), with the row's id and version.
    const { id: rowId, version, ...stored } = row
    return { id: rowId, version, ...t.decodeStored(stored) } as never
  },
  create: (type, input) => ({ _tag: "Create", type, input }),
  update: (type, id, input) => ({ _tag: "Update", type, id, input }),
  remove: (type, id) => ({ _tag: "Delete", type, id }),
  invoke: (type, id, method, ...params) => ({ _tag: "Invoke", type, id, method, input: (params[0] ?? {}) as Record<string, unknown> })
})

/** The command a change stands for, as REST would have sent it; Left: why the change is not one (the author's bug). */
const readChange = (app: CompiledApp, change: unknown, n: number): Either.Either<{ type: CompiledType; command: Command }, UserCodeFailure> => {
  const bad = (why: string) => Either.left(userCodeFailure(`change ${n + 1} ${why}`))
  const shape = notPlainObject(change)
  if (shape !== undefined) return bad(`${shape}; build changes with ctx.create, ctx.update, ctx.remove or ctx.invoke`)
  const c = change as Record<string, unknown>
  const tag = c._tag
  const typeName = c.type
  if (typeof tag !== "string" || !TAGS.has(tag)) return bad("is not a change; build changes with ctx.create, ctx.update, ctx.remove or ctx.invoke")
  const type = typeof typeName === "string" ? app.types.get(typeName) : undefined
  if (type === undefined) return bad(`names no type of the app (${describeThrown(typeName)})`)
  const id = c.id
  if (tag !== "Create" && (typeof id !== "string" || id.length === 0)) return bad(`(${tag.toLowerCase()} ${type.name}) needs a row id`)
  const method = c.method
  if (tag === "Invoke" && (typeof method !== "string" || !type.methods.has(method))) {
    return bad(`invokes ${describeThrown(method)}, which is no method of ${type.name}`)
  }
  // The input is copied into plain JSON data, read once: what is decoded is what was checked.
  const input = tag === "Delete" ? Either.right({}) : plainData(c.input ?? {})
  if (Either.isLeft(input)) return bad(`(${tag.toLowerCase()} ${type.name}) has an input that is not JSON data: ${issuesText(input.left)}`)
  const command: Command = tag === "Create"
    ? { _tag: "Create", type: type.name, input: input.right }
    : tag === "Update"
    ? { _tag: "Update", type: type.name, id: id as string, input: input.right }
    : tag === "Delete"
    ? { _tag: "Delete", type: type.name, id: id as string }
    : { _tag: "Invoke", type: type.name, id: id as string, method: method as string, input: input.right }
  return Either.right({ type, command })
}

/**
 * Runs the command's `decide` (isolated) against `rows` and decodes its changes. Left: its refusal (Rejected), a
 * change whose input does not decode (ValidationFailed), or the author's bug (UserCodeFailure: it threw, returned
 * something else than changes, or changed one row twice).
 */
export const planCommand = (
  app: CompiledApp,
  command: CompiledCommand,
  params: Record<string, unknown>,
  rows: RowLookup
): Either.Either<ReadonlyArray<PlannedChange>, CommandError | UserCodeFailure> => {
  const copyParams = command.copyParams
  const returned = runUserCode(() => command.decide(contextFor(app, rows), copyParams === undefined ? params : copyParams(params)))
  if (Either.isLeft(returned)) return Either.left(returned.left)
  // Reading what decide returned is reading user data: a getter or a Proxy may throw here too.
  const planned = runUserCode((): Either.Either<ReadonlyArray<PlannedChange>, CommandError | UserCodeFailure> => {
    const result: unknown = returned.right
    if (isRejection(result)) {
      return Either.left(rejectedBy(result, { type: command.name, id: "", operation: command.name }))
    }
    if (!Array.isArray(result)) {
      return Either.left(userCodeFailure(`it returned ${describeThrown(result)}, not a list of changes or reject(code, message)`))
    }
    const changes: Array<PlannedChange> = []
    const touched = new Set<string>()
    const n = result.length
    for (let i = 0; i < n; i++) {
      const read = readChange(app, result[i], i)
      if (Either.isLeft(read)) return Either.left(read.left)
      const { type, command: change } = read.right
      if (change._tag !== "Create") {
        const key = `${type.name}/${change.id}`
        if (touched.has(key)) return Either.left(userCodeFailure(`it changes ${type.name} ${change.id} twice; a command makes at most one change per row`))
        touched.add(key)
      }
      const intent = toIntent(type, change)
      if (Either.isLeft(intent)) return Either.left(intent.left)
      changes.push({ type, ...(change._tag === "Create" ? {} : { id: change.id }), intent: intent.right })
    }
    return Either.right(changes)
  })
  return Either.isLeft(planned) ? Either.left(planned.left) : planned.right
}

/** The author's bug in a command, as the caller sees it: 500 MethodFailed naming the command. */
export const commandFailed = (command: CompiledCommand, failure: UserCodeFailure) =>
  new MethodFailed({ type: command.name, id: "", operation: command.name, reason: failure.reason })

/** The operation a planned change runs, as MethodFailed names it. */
export const operationOfChange = (change: PlannedChange) =>
  change.intent._tag === "Invoke" ? change.intent.method.name : change.intent._tag.toLowerCase()

/**
 * Decides a whole command without I/O: the drafts of its events, in the order of its changes, or the first
 * refusal or error. `lastId(type)`: the highest id handed out for the type (the command's creates take the next).
 * `params` are decoded already (`command.decodeParams`).
 */
export const decideCommand = (
  app: CompiledApp,
  command: CompiledCommand,
  params: Record<string, unknown>,
  rows: RowLookup,
  lastId: (type: string) => number
): Either.Either<ReadonlyArray<CommandEventDraft>, CommandError> => {
  const planned = planCommand(app, command, params, rows)
  if (Either.isLeft(planned)) {
    const e = planned.left
    return Either.left(e._tag === "UserCodeFailure" ? commandFailed(command, e) : e)
  }
  const ids = new Map<string, number>()
  const drafts: Array<CommandEventDraft> = []
  for (const change of planned.right) {
    const type = change.type.name
    let id = change.id ?? ""
    if (change.intent._tag === "Create") {
      const next = (ids.get(type) ?? lastId(type)) + 1
      ids.set(type, next)
      id = String(next)
    }
    const current = change.intent._tag === "Create" ? undefined : rows(type, id)
    const decided = decide(change.type, id, current, change.intent, undefined)
    if (Either.isLeft(decided)) {
      const e = decided.left
      return Either.left(e._tag === "UserCodeFailure" ? new MethodFailed({ type, id, operation: operationOfChange(change), reason: e.reason }) : e)
    }
    drafts.push({ type, id, current, draft: decided.right })
  }
  return Either.right(drafts)
}
