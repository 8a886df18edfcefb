/**
 * Watches an app folder for `wo dev`: a burst of saves (an editor writes, renames, touches) becomes one change,
 * reported once the folder has been quiet for `quietMs`. The data dir, node_modules and dot-files are not the app.
 */
import { Effect, Queue, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"

const IGNORED = new Set(["node_modules", ".data"])

/** Whether `relative` (a path inside the app folder) is part of the app: not its data dir, packages or dot-files. */
export const isAppFile = (relative: string, dataDir: string | undefined) => {
  const parts = relative.split(path.sep)
  if (parts.some((p) => IGNORED.has(p) || p.startsWith("."))) return false
  return dataDir === undefined || !(relative === dataDir || relative.startsWith(dataDir + path.sep))
}

/**
 * Starts watching now (a save right after this returns is seen) and returns one element per quiet change of the
 * folder; the watcher closes with the scope.
 */
export const watchApp = (dir: string, options: { readonly quietMs: number; readonly dataDir?: string }) =>
  Effect.gen(function* () {
    const dataDir = options.dataDir === undefined ? undefined : path.relative(dir, options.dataDir)
    // One pending change is all a reload needs to know: later ones before it is taken are the same change.
    const changes = yield* Queue.sliding<void>(1)
    yield* Effect.acquireRelease(
      Effect.sync(() =>
        fs.watch(dir, { recursive: true }, (_event, file) => {
          if (file === null || isAppFile(file.toString(), dataDir)) Queue.unsafeOffer(changes, undefined)
        })),
      (watcher) => Effect.sync(() => watcher.close())
    )
    return Stream.fromQueue(changes).pipe(Stream.debounce(options.quietMs))
  })
