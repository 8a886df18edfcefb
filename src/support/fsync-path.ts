/**
 * Makes a file's contents, or a directory's entries (a file created, renamed or removed in it), durable: a rename
 * survives a power cut only once its directory is synced.
 */
import * as fs from "node:fs"

export const fsyncPath = (p: string) => {
  const fd = fs.openSync(p, "r")
  try {
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}
