/**
 * The files of one state of a LevelDB directory, pinned by open descriptors, so that they can be copied at leisure.
 *
 * LevelDB's state on disk is CURRENT, the MANIFEST it names (an append-only log of which tables are live), the
 * tables (`*.ldb`, `*.sst`: written once, never changed, only deleted) and the write-ahead logs (`*.log`:
 * appended by writes). While no write is in flight (the caller holds them: LevelDbShape.whileNoWrites), a
 * write-ahead log does not grow; LevelDB's background compaction may still add tables, append to the MANIFEST
 * and delete files. So the files are listed, opened and sized, then listed again: if nothing was added, removed
 * or appended to in between, the descriptors hold one state (a file deleted later stays readable through its
 * descriptor), else it is tried again. Only the first `size` bytes of each are copied: what a write appends after
 * the hold is not part of the state.
 */
import * as fs from "node:fs"
import * as path from "node:path"

const STATE_FILE = /^(CURRENT|MANIFEST-\d+|\d+\.(ldb|sst|log))$/

export interface PinnedFile {
  readonly name: string
  readonly fd: number
  readonly size: number
}

/**
 * What changes when the state does: the names, CURRENT, and the sizes of the MANIFEST and the write-ahead logs. (A
 * table grows only while a compaction writes it, before the MANIFEST names it: a copy of it is left unused.)
 */
const listing = (dir: string) => {
  const names = fs.readdirSync(dir).filter((f) => STATE_FILE.test(f)).sort()
  const current = fs.readFileSync(path.join(dir, "CURRENT"), "utf8")
  const sizes = names.filter((f) => /^(MANIFEST-\d+|\d+\.log)$/.test(f)).map((f) => `${f}:${fs.statSync(path.join(dir, f)).size}`)
  return { key: `${names.join(",")}|${current}|${sizes.join(",")}`, names }
}

const closeAll = (files: ReadonlyArray<PinnedFile>) => {
  for (const f of files) fs.closeSync(f.fd)
}

/** Opens the files of one state of `dir` (synchronously: the caller holds the writes meanwhile). */
export const pinFiles = (dir: string, attempts = 20): Array<PinnedFile> => {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const files: Array<PinnedFile> = []
    try {
      const before = listing(dir)
      for (const name of before.names) {
        const fd = fs.openSync(path.join(dir, name), "r")
        files.push({ name, fd, size: fs.fstatSync(fd).size })
      }
      if (listing(dir).key === before.key) return files
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") {
        closeAll(files)
        throw e
      }
      // deleted by a compaction meanwhile: again
    }
    closeAll(files)
  }
  throw new Error(`the files of ${dir} kept changing (LevelDB compacting) over ${attempts} attempts`)
}

const CHUNK = 1024 * 1024

/** Copies the pinned files into `dest` (each up to its pinned size) and closes them; asynchronous, in chunks. */
export const copyPinned = async (files: ReadonlyArray<PinnedFile>, dest: string) => {
  const buffer = Buffer.allocUnsafe(CHUNK)
  try {
    for (const file of files) {
      const out = await fs.promises.open(path.join(dest, file.name), "wx")
      try {
        for (let at = 0; at < file.size; ) {
          const want = Math.min(CHUNK, file.size - at)
          const { bytesRead } = await new Promise<{ bytesRead: number }>((resolve, reject) =>
            fs.read(file.fd, buffer, 0, want, at, (e, bytesRead) => (e ? reject(e) : resolve({ bytesRead }))))
          if (bytesRead === 0) throw new Error(`${file.name} ended at ${at} bytes, before its pinned ${file.size}`)
          await out.write(buffer, 0, bytesRead, at)
          at += bytesRead
        }
        await out.sync()
      } finally {
        await out.close()
      }
    }
  } finally {
    closeAll(files)
  }
}
