/**
 * The CPU time one thread of this process has used, from Linux's /proc (utime + stime of the thread's stat, in
 * clock ticks of 10 ms: the USER_HZ of every Linux Node runs on). What tells a worker thread that runs without
 * making progress (a loop in user code) from one that waits or gets no CPU (an import that never settles, idle
 * priority on busy cores). Undefined without an id or where /proc has no such thread.
 */
import * as fs from "node:fs"

const TICK_MS = 10

export const threadCpuMs = (id: number | null): number | undefined => {
  if (id === null) return undefined
  try {
    // The fields after the command name, which is in parentheses and may hold spaces: utime and stime are the 12th and 13th.
    const stat = fs.readFileSync(`/proc/self/task/${id}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS
  } catch {
    return undefined
  }
}
