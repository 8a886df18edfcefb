/**
 * Watches an app folder for `wo dev`: a burst of saves (an editor writes, renames, touches) becomes one change,
 * reported once the folder has been quiet for `quietMs`. The data dir, node_modules and dot-files are not the app.
 */
import { Effect, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"

const IGNORED = new Set(["node_modules", ".data"])

const isAppFile = (relative: string, dataDir: string | undefined) => {
  const parts = relative.split(path.sep)
  if (parts.some((p) => IGNORED.has(p) || p.startsWith("."))) return false
  return dataDir === undefined || !(relative === dataDir || relative.startsWith(dataDir + path.sep))
}

/** One element per quiet change of the folder; the watcher closes with the stream's scope. */
export const watchApp = (dir: string, options: { readonly quietMs: number; readonly dataDir?: string }): Stream.Stream<void> => {
  const dataDir = options.dataDir === undefined ? undefined : path.relative(dir, options.dataDir)
  const changes = Stream.asyncScoped<void>((emit) =>
    Effect.acquireRelease(
      Effect.sync(() =>
        fs.watch(dir, { recursive: true }, (_event, file) => {
          if (file === null || isAppFile(file.toString(), dataDir)) void emit.single(undefined)
        })),
      (watcher) => Effect.sync(() => watcher.close())
    ))
  return changes.pipe(Stream.debounce(options.quietMs))
}

