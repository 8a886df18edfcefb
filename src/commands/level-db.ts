/**
 * The classic-level database as a scoped service: opened once per data dir, shared by the EventLog and the
 * session store (different key prefixes), closed when the runtime's scope closes.
 */
import { ClassicLevel } from "classic-level"
import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import { StoreUnavailable } from "../domain/errors.ts"

export type Db = ClassicLevel<string, string>

export class LevelDb extends Context.Tag("writeonce/LevelDb")<LevelDb, Db>() {}

export const storeError = (what: string) => (e: unknown) =>
  new StoreUnavailable({ reason: `${what}: ${e instanceof Error ? e.message : String(e)}` })

const explainOpenFailure = (dir: string) => (e: unknown) => {
  const cause = (e as { cause?: { code?: string; message?: string } })?.cause
  const locked = /lock/i.test(String(cause?.message ?? (e as Error)?.message ?? ""))
  return new StoreUnavailable({
    reason: locked
      ? `the data dir ${dir} is in use by another process (is a server already running on it?)`
      : `cannot open the data dir ${dir}: ${cause?.message ?? (e instanceof Error ? e.message : String(e))}`
  })
}

/** Opens the database, failing with a clear message when the directory is locked or unreadable. */
export const openDb = (dir: string) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        fs.mkdirSync(dir, { recursive: true })
        const db: Db = new ClassicLevel(dir, { keyEncoding: "utf8", valueEncoding: "utf8" })
        await db.open()
        return db
      },
      catch: explainOpenFailure(dir)
    }),
    (db) => Effect.promise(() => db.close()).pipe(Effect.ignore)
  )

export const levelDbLayer = (dir: string) => Layer.scoped(LevelDb, openDb(dir))
