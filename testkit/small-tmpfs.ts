/**
 * A small tmpfs for a suite's full-disk cases: mounted when the module loads (mounting needs root; CI runs as root;
 * elsewhere it warns loudly that `what` is skipped), unmounted after the suite. `remount` changes its options (a
 * larger size: space returns).
 */
import { execFileSync } from "node:child_process"
import { afterAll } from "vitest"
import { tempDir } from "./server.ts"

export const smallTmpfs = (what: string, size = "1200k") => {
  const mountPoint = tempDir("wo-tmpfs-")
  const mounted = (() => {
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", mountPoint], { stdio: "pipe" })
      return true
    } catch (e) {
      console.warn(`SKIPPED ${what}: cannot mount a tmpfs here (${String((e as Error).message).split("\n")[0]}); CI runs it as root`)
      return false
    }
  })()
  afterAll(() => {
    if (mounted) execFileSync("umount", ["-l", mountPoint], { stdio: "pipe" })
  })
  return {
    mountPoint,
    mounted,
    remount: (options: string) => void execFileSync("mount", ["-o", `remount,${options}`, mountPoint], { stdio: "pipe" })
  }
}
