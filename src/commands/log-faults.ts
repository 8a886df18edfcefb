/**
 * A test-only fault injector for the classic-level log. When provided, `beforeWrite` runs before every durable
 * write; failing it fails the whole batch exactly as a disk error would, and delaying it holds the ack.
 */
import { Context, type Effect } from "effect"
import type { StoreUnavailable } from "../domain/errors.ts"

export class LogFaults extends Context.Tag("writeonce/LogFaults")<
  LogFaults,
  { readonly beforeWrite: (events: number) => Effect.Effect<void, StoreUnavailable> }
>() {}
