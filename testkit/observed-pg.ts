/**
 * The PostgreSQL connection of src/log/postgres/connection.ts, with what its real `pg` clients send and get back
 * observed, for tests that count statements or rows: `sent` hears of every statement as it is sent (failed ones too),
 * `returned` of every result; `via` says whether it ran on the pool (`query`), on a checked-out connection (`client`)
 * or on a connection of its own (`dedicated`: the follower's LISTEN). `notified` hears of every notification a
 * dedicated connection gets, before the log's own handler does (in the same turn).
 */
import { Effect, Layer } from "effect"
import type pg from "pg"
import { PgConnection, pgConnectionLayer } from "../src/log/postgres/connection.ts"
import { makePostgresLog } from "../src/log/postgres/postgres-log.ts"
import { EventLog } from "../src/log/event-log.ts"

export type Via = "pool" | "client" | "dedicated"

export interface PgObserver {
  readonly sent?: (text: string, via: Via) => void
  readonly returned?: (text: string, result: { readonly rows: ReadonlyArray<unknown> }, via: Via) => void
  readonly notified?: (payload: string | undefined) => void
}

export const observedConnection = (url: string, observer: PgObserver) => {
  const proxied = <C extends pg.ClientBase>(c: C, via: Via): C =>
    new Proxy(c, {
      get(target, p) {
        if (p === "query") {
          return (text: string, values?: Array<unknown>) => {
            observer.sent?.(text, via)
            return target.query(text, values).then((r) => (observer.returned?.(text, r, via), r))
          }
        }
        const v = Reflect.get(target, p, target)
        return typeof v === "function" ? v.bind(target) : v
      }
    })
  // One proxy per pooled connection, as the log sees one object per connection (it keeps per-connection state).
  const proxies = new WeakMap<pg.PoolClient, pg.PoolClient>()
  const observed = (c: pg.PoolClient): pg.PoolClient => {
    let proxy = proxies.get(c)
    if (proxy === undefined) {
      proxy = proxied(c, "client")
      proxies.set(c, proxy)
    }
    return proxy
  }
  return Layer.effect(
    PgConnection,
    Effect.map(PgConnection, (conn) => ({
      ...conn,
      client: Effect.map(conn.client, observed),
      dedicated: Effect.map(conn.dedicated, (c) => {
        c.on("notification", (n) => observer.notified?.(n.payload))
        return proxied(c, "dedicated")
      }),
      query: ((what: string, text: string, values?: ReadonlyArray<unknown>) =>
        Effect.suspend(() => {
          observer.sent?.(text, "pool")
          return Effect.tap(conn.query(what, text, values), (r) => Effect.sync(() => observer.returned?.(text, r, "pool")))
        })) as typeof conn.query
    }))
  ).pipe(Layer.provide(pgConnectionLayer(url)))
}

/** The PostgreSQL EventLog on `url`, over the observed connection. */
export const observedPostgresLog = (url: string, observer: PgObserver) =>
  Layer.scoped(EventLog, makePostgresLog).pipe(Layer.provide(observedConnection(url, observer)))
