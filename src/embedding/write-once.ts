/**
 * The typed in-process API: the app's own operations for an Effect program that embeds the runtime, typed from
 * the app `defineApp` returned.
 *
 *   const wo = yield* WriteOnce.of(app)
 *   const ticket = yield* wo.create("tickets", { title: "Printer on fire" })
 *   yield* wo.invoke("tickets", ticket.id, "assign", { agent: "1" })
 *   const open = yield* wo.list("tickets", { where: { status: "open" }, order: "-id" })
 *
 * A thin facade over the services every surface uses (Commands, Queries, Views, the subscription registry and
 * the event log): no second data path, the same decode, rules and refusals as REST and MCP, as the same tagged
 * errors (NotFound, VersionConflict, ValidationFailed, Rejected with its code, `missing_reference` included).
 * In process every operation of every type is available: the `rest` and `mcp` lists and the principals' grants
 * are about clients. Writes record the actor `{ client: "in-process" }` (`wo.as(principal)`: that principal too).
 */
import { Effect, Either, Stream } from "effect"
import type { AppDef } from "../domain/catalog.ts"
import type { CompiledView } from "../domain/compile-views.ts"
import { Catalog } from "../domain/app-catalog.ts"
import { Commands, type ExecuteOptions } from "../commands/commands.ts"
import type { CommandCommitted } from "../commands/submission.ts"
import { Queries, type Page } from "../projections/queries.ts"
import { copyData } from "../domain/codecs.ts"
import { Views, ViewFailed, ViewRefolding } from "../projections/views/views.ts"
import { SubscriptionRegistry } from "../subscriptions/registry.ts"
import type { Topic } from "../subscriptions/live-queries.ts"
import { EventLog } from "../log/event-log.ts"
import type { StoredEvent } from "../domain/events.ts"
import { isStoreError, NotFound, ValidationFailed, type CommandError, type StoreError } from "../domain/errors.ts"
import { fromArguments, type ListRequest } from "../domain/list-request.ts"
import { actorOf, IN_PROCESS, type Acting, type Actor } from "../domain/actor.ts"
import { rowUri, viewEntryUri, viewUri } from "../domain/uri.ts"
import { KeyedViews, type KeyedEntry } from "../projections/views/keyed-views.ts"
import { entryListable, entryListOptions } from "../domain/keyed-list-request.ts"
import { WoConfig } from "../support/config.ts"
import type {
  CommandName,
  CommandParams,
  CreateInput,
  ListOptions,
  MethodName,
  MethodParams,
  PageOf,
  ParamsAndOptions,
  RowOf,
  TypeName,
  UpdateInput,
  ViewName,
  ViewValue
} from "./app-types.ts"

/** How a write may be qualified, as a client qualifies it over REST (If-Match, Idempotency-Key). */
export interface WriteOptions {
  /** Refused with VersionConflict unless the row is at this version. */
  readonly expectedVersion?: number
  /** Done once per key: a retry with the same key and request gets the first answer back. */
  readonly idempotencyKey?: string
}

/** A view's value and the log position of its last change. */
export interface ViewRead<V> {
  readonly value: V
  readonly seq: number
}

/** What reading a view may meet: no such view, a failed fold, or a fold going on in the background. */
export type ViewError = NotFound | ViewFailed | ViewRefolding

/** One entry of a keyed view: its key, its value and the log position of its last change. */
export interface ViewEntry<V> {
  readonly key: string
  readonly value: V
  readonly seq: number
}

/** A page of a keyed view's entries: as REST and MCP page them (key order unless asked otherwise; the same cursors). */
export interface EntryPage<V> {
  readonly items: ReadonlyArray<ViewEntry<V>>
  readonly nextCursor?: string
}

/** Which entries of a keyed view, as a list of rows takes them: filters and order on the entry's scalar fields. */
export interface EntryListOptions {
  readonly where?: Readonly<Record<string, unknown>>
  readonly order?: string
  readonly cursor?: string
  readonly limit?: number
}

export interface WriteOnceApi<A extends AppDef> {
  /** Creates a row; succeeds with it once durable and projected. */
  readonly create: <T extends TypeName<A>>(type: T, input: CreateInput<A, T>, options?: Pick<WriteOptions, "idempotencyKey">) => Effect.Effect<RowOf<A, T>, CommandError>
  /** Changes some fields of a row (guarded fields are refused, as over REST). */
  readonly update: <T extends TypeName<A>>(type: T, id: string, input: UpdateInput<A, T>, options?: WriteOptions) => Effect.Effect<RowOf<A, T>, CommandError>
  readonly delete: <T extends TypeName<A>>(type: T, id: string, options?: WriteOptions) => Effect.Effect<void, CommandError>
  /** Calls a method of a row: `invoke("tickets", "3", "assign", { agent: "1" })`. */
  readonly invoke: <T extends TypeName<A>, M extends MethodName<A, T>>(
    type: T,
    id: string,
    method: M,
    ...params: ParamsAndOptions<MethodParams<A, T, M>, WriteOptions>
  ) => Effect.Effect<RowOf<A, T>, CommandError>
  /** Runs an app command (a command across entity types): all of its changes, or none. */
  readonly command: <K extends CommandName<A>>(
    name: K,
    ...params: ParamsAndOptions<CommandParams<A, K>, Pick<WriteOptions, "idempotencyKey">>
  ) => Effect.Effect<CommandCommitted, CommandError>
  readonly get: <T extends TypeName<A>>(type: T, id: string) => Effect.Effect<RowOf<A, T>, NotFound>
  /** One page of rows, filtered and ordered as REST's and MCP's lists are (the same parser, the same cursors). */
  readonly list: <T extends TypeName<A>>(type: T, options?: ListOptions<A, T>) => Effect.Effect<PageOf<RowOf<A, T>>, NotFound | ValidationFailed>
  /** A view's value, decoded through its schema. */
  readonly view: <V extends ViewName<A>>(name: V) => Effect.Effect<ViewValue<A, V>, ViewError>
  /** A keyed view's entry under `key`, decoded through its schema; NotFound when it has none. */
  readonly viewEntry: <V extends ViewName<A>>(name: V, key: string) => Effect.Effect<ViewEntry<ViewValue<A, V>>, ViewError>
  /** A page of a keyed view's entries. */
  readonly viewEntries: <V extends ViewName<A>>(name: V, options?: EntryListOptions) => Effect.Effect<EntryPage<ViewValue<A, V>>, ViewError | ValidationFailed>
  readonly changes: {
    /** The row now, then again after each of its changes (null while there is none: not yet, or deleted). */
    readonly row: <T extends TypeName<A>>(type: T, id: string) => Stream.Stream<RowOf<A, T> | null>
    /** A live query: the list's page now, then again after each change that touches its result. */
    readonly list: <T extends TypeName<A>>(type: T, options?: ListOptions<A, T>) => Stream.Stream<PageOf<RowOf<A, T>>, NotFound | ValidationFailed>
    /** The view's value now, then again after each change of it. */
    readonly view: <V extends ViewName<A>>(name: V) => Stream.Stream<ViewRead<ViewValue<A, V>>, ViewError>
    /** A keyed view's entry now, then again after each change of it (null while there is none). */
    readonly viewEntry: <V extends ViewName<A>>(name: V, key: string) => Stream.Stream<ViewEntry<ViewValue<A, V>> | null, ViewError>
  }
  /** The log's events from `fromSeq` (default 1: all of them) up to its head at the time of reading, in order. */
  readonly events: (fromSeq?: number) => Stream.Stream<StoredEvent, StoreError>
  /** The same API, its writes recorded as made by `principal` (its name, and whom it acts for). */
  readonly as: (principal: Acting) => WriteOnceApi<A>
}

/**
 * A row (a page, a command's result) as the app's type says it is (the writer decoded and checked it through the
 * type's schema), as a copy of its own: the objects the writer and the row cache hold are never the program's, so a
 * program that changes what it got changes nothing served or stored.
 */
const typed = <R>(value: unknown): R => copyData(value) as R

/**
 * A stream of `read`'s result now and after each notice of `topic`. Notices arriving while the consumer is busy
 * collapse into one (a sliding buffer of one): each element is the state after the changes so far, never a stale one.
 */
const watchTopic = <X, E>(registry: SubscriptionRegistry["Type"], topic: Topic, read: Effect.Effect<X, E>): Stream.Stream<X, E> =>
  Stream.asyncPush<void>(
    (emit) =>
      // Subscribed first, then the first read asked for: a change between the two is not missed.
      Effect.tap(registry.subscribe({ deliver: () => void emit.single(undefined) }, [topic]), () => Effect.sync(() => emit.single(undefined))),
    { bufferSize: 1, strategy: "sliding" }
  ).pipe(Stream.mapEffect(() => read))

export class WriteOnce {
  /** The typed API of `app`, over the services of the runtime in context (`coreLayer` or `writeOnceLayer`). */
  static readonly of = <A extends AppDef>(app: A): Effect.Effect<WriteOnceApi<A>, never, Catalog | Commands | Queries | Views | KeyedViews | WoConfig | SubscriptionRegistry | EventLog> =>
    Effect.gen(function* () {
      const catalog = yield* Catalog
      // `app` gives the API its type: it must be the app the runtime in context serves.
      if (catalog.name !== app.name) {
        return yield* Effect.dieMessage(`WriteOnce.of(app): the runtime in context serves the app "${catalog.name}", not "${app.name}"`)
      }
      const commands = yield* Commands
      const queries = yield* Queries
      const views = yield* Views
      const keyed = yield* KeyedViews
      const pageSizes = yield* WoConfig
      const registry = yield* SubscriptionRegistry
      const log = yield* EventLog

      const listRequest = (type: string, options: ListOptions<any, any> | undefined): Either.Either<ListRequest, NotFound | ValidationFailed> => {
        const compiled = catalog.types.get(type)
        if (compiled === undefined) return Either.left(new NotFound({ type, id: "" }))
        return fromArguments(compiled, options ?? {})
      }
      const list = (type: string, options: ListOptions<any, any> | undefined) =>
        Effect.flatMap(listRequest(type, options), (request) => Effect.map(queries.list(type, request), (page) => typed<Page>(page)))

      const readView = (name: string): Effect.Effect<ViewRead<unknown>, ViewError> =>
        Effect.suspend((): Effect.Effect<ViewRead<unknown>, ViewError> => {
          const compiled = catalog.views.get(name)
          const snapshot = views.get(name)
          if (compiled === undefined || snapshot === undefined) return Effect.fail(new NotFound({ type: "_views", id: name }))
          if (snapshot.refolding !== undefined) return Effect.fail(new ViewRefolding({ name, reason: snapshot.refolding }))
          if (snapshot.failed !== undefined || snapshot.valueJson === undefined) {
            return Effect.fail(new ViewFailed({ name, reason: snapshot.failed ?? `view ${name} has no value` }))
          }
          const decoded = compiled.decode(JSON.parse(snapshot.valueJson))
          // An older declaration's value (served while the current one is folded) may not fit the current schema.
          if (Either.isLeft(decoded) && snapshot.stale !== undefined) return Effect.fail(new ViewRefolding({ name, reason: "its declaration changed; the older value does not fit the new schema" }))
          return Either.isLeft(decoded)
            ? Effect.fail(new ViewFailed({ name, reason: decoded.left }))
            : Effect.succeed({ value: decoded.right, seq: snapshot.seq })
        })

      /** A keyed view's compiled declaration, or NotFound (no such view, or one with a single value). */
      const keyedView = (name: string) => {
        const compiled = catalog.views.get(name)
        return compiled?.keyed === true ? Either.right(compiled) : Either.left(new NotFound({ type: "_views", id: name }))
      }
      /** An entry as stored, decoded through the view's schema (from the stored text: the value is the program's own). */
      const decodeEntry = (compiled: CompiledView, entry: KeyedEntry): Effect.Effect<ViewEntry<unknown>, ViewFailed> =>
        Either.match(compiled.decode(JSON.parse(entry.json)), {
          onLeft: (reason) => Effect.fail(new ViewFailed({ name: compiled.name, reason })),
          onRight: (value) => Effect.succeed({ key: entry.key, value, seq: entry.seq })
        })
      // A store that cannot be read is a defect here, as for rows.
      const readEntry = (name: string, key: string): Effect.Effect<ViewEntry<unknown> | null, ViewError> =>
        Effect.flatMap(keyedView(name), (compiled) =>
          Effect.flatMap(Effect.catchIf(keyed.get(name, key), isStoreError, Effect.die), (entry) => entry === undefined ? Effect.succeed(null) : decodeEntry(compiled, entry)))
      const entryPage = (name: string, options: EntryListOptions | undefined): Effect.Effect<EntryPage<unknown>, ViewError | ValidationFailed> =>
        Effect.flatMap(keyedView(name), (compiled) =>
          Effect.flatMap(Either.flatMap(fromArguments(entryListable(compiled), options ?? {}), (request) => entryListOptions(compiled, request, pageSizes)), (request) =>
            Effect.flatMap(Effect.catchIf(keyed.list(name, request), isStoreError, Effect.die), (page) =>
              Effect.map(Effect.forEach(page.items, (entry) => decodeEntry(compiled, entry)), (items) => (page.next === undefined ? { items } : { items, nextCursor: page.next })))))

      const make = (actor: Actor): WriteOnceApi<A> => {
        const execute = (options: WriteOptions | undefined): ExecuteOptions =>
          options?.idempotencyKey === undefined ? { actor } : { actor, idempotencyKey: options.idempotencyKey }
        return {
          create: (type, input, options) =>
            Effect.map(commands.execute({ _tag: "Create", type, input }, execute(options)), (c) => typed(c.row)),
          update: (type, id, input, options) =>
            Effect.map(
              commands.execute({ _tag: "Update", type, id, input, expectedVersion: options?.expectedVersion }, execute(options)),
              (c) => typed(c.row)
            ),
          delete: (type, id, options) =>
            Effect.asVoid(commands.execute({ _tag: "Delete", type, id, expectedVersion: options?.expectedVersion }, execute(options))),
          invoke: (type, id, method, ...[params, options]) =>
            Effect.map(
              commands.execute({ _tag: "Invoke", type, id, method, input: params ?? {}, expectedVersion: options?.expectedVersion }, execute(options)),
              (c) => typed(c.row)
            ),
          command: (name, ...[params, options]) => Effect.map(commands.executeAppCommand(name, params ?? {}, execute(options)), (done) => typed<typeof done>(done)),
          // A store that cannot be read is a defect here, as it always was (the typed API's reads fail with NotFound).
          get: (type, id) => Effect.map(Effect.catchIf(queries.get(type, id), isStoreError, Effect.die), (row) => typed(row)),
          list: (type, options) => list(type, options) as Effect.Effect<PageOf<any>, NotFound | ValidationFailed>,
          view: (name) => Effect.map(readView(name), (read) => read.value as ViewValue<A, typeof name>),
          viewEntry: (name, key) =>
            Effect.flatMap(readEntry(name, key), (entry) => entry === null ? Effect.fail(new NotFound({ type: `_views/${name}`, id: key })) : Effect.succeed(entry)) as Effect.Effect<ViewEntry<any>, ViewError>,
          viewEntries: (name, options) => entryPage(name, options) as Effect.Effect<EntryPage<any>, ViewError | ValidationFailed>,
          changes: {
            row: (type, id) =>
              watchTopic(registry, { uri: rowUri(type, id) }, Effect.map(Effect.orDie(queries.read(type, id)), (row) => typed(row ?? null))).pipe(
                // A notice of a change already read (collapsed behind an earlier read) gives the same row again.
                Stream.changesWith((a: any, b: any) => a?.version === b?.version)
              ),
            list: (type, options) =>
              Stream.unwrap(Effect.map(listRequest(type, options), (request) => {
                // The in-process query's own URI: the registry keys live queries by URI, so one shared by every
                // stream of the same filters, and none a client could subscribe to.
                const uri = `in-process://${type}?${JSON.stringify(options?.where ?? {})}`
                return watchTopic(registry, { uri, query: { uri, type, where: request.where ?? [] } }, Effect.map(queries.list(type, request), (page) => typed<Page>(page)))
              })) as Stream.Stream<PageOf<any>, NotFound | ValidationFailed>,
            view: (name) =>
              watchTopic(registry, { uri: viewUri(name) }, readView(name)).pipe(
                Stream.changesWith((a, b) => a.seq === b.seq)
              ) as Stream.Stream<ViewRead<any>, ViewError>,
            viewEntry: (name, key) =>
              watchTopic(registry, { uri: viewEntryUri(name, key) }, readEntry(name, key)).pipe(
                Stream.changesWith((a, b) => a?.seq === b?.seq)
              ) as Stream.Stream<ViewEntry<any> | null, ViewError>
          },
          events: (fromSeq = 1) => log.readFrom(fromSeq),
          as: (principal) => make(actorOf(principal, "in-process"))
        }
      }
      return make(IN_PROCESS)
    })
}
