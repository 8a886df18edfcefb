/**
 * Stops a test cluster's servers at once, for a cluster whose data is deleted next: SIGQUIT is PostgreSQL's
 * immediate shutdown, with no shutdown checkpoint (the script's `stop` writes one on every node, seconds of fsync
 * on a loaded machine). A node whose server is not running (killed by a test) is left alone.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

const SCRIPT = path.resolve(import.meta.dirname, "../../scripts/pg-cluster.sh")

/** The postmaster of the server in `dataDir`, if it runs (its pid file can outlive a kill -9, and the pid be reused). */
const postmasterOf = (dataDir: string): number | undefined => {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0])
    const argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")
    return argv.includes(dataDir) ? pid : undefined
  } catch {
    return undefined
  }
}

/** Exited: no such process, or a zombie (an orphan's exit is reaped by init, maybe late). */
const gone = (pid: number) => {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").startsWith("Z")
  } catch {
    return true
  }
}

/** The processes a postmaster started (backends, walsenders, its auxiliary processes), as running now. */
export const childrenOf = (postmaster: number): Array<number> =>
  fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p)).map(Number).filter((pid) => {
    try {
      return Number(fs.readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ")[1]) === postmaster
    } catch {
      return false // exited meanwhile
    }
  })

/** Sends `signal` unless the process has exited meanwhile (a backend ends whenever its client leaves). */
export const signalIfRunning = (pid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(pid, signal)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e
  }
}

export const stopClusterNow = (dir: string) => {
  if (!fs.existsSync(dir)) return
  const nodes = fs.readdirSync(dir).map((n) => path.join(dir, n)).filter((d) => fs.existsSync(path.join(d, "PG_VERSION")))
  const pids = nodes.map(postmasterOf).filter((pid) => pid !== undefined)
  for (const pid of pids) {
    signalIfRunning(pid, "SIGQUIT")
    // A server a test left paused (SIGSTOP) handles nothing until it runs again, nor do its children.
    for (const p of [pid, ...childrenOf(pid)]) signalIfRunning(p, "SIGCONT")
  }
  const pause = new Int32Array(new SharedArrayBuffer(4))
  for (let i = 0; i < 600 && !pids.every(gone); i++) Atomics.wait(pause, 0, 0, 50)
  // Anything still up after 30 s: the script's own stop (fast, then immediate).
  if (!pids.every(gone)) execFileSync("bash", [SCRIPT, "stop", dir], { stdio: "ignore" })
}
