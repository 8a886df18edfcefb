/**
 * Shows the PostgreSQL behaviour behind the PG follower's divergence check (src/log/postgres/follow.ts):
 * `node --import tsx scripts/pg-unacked-probe.ts` (TRIES, default 6). Each try starts a loopback cluster
 * (scripts/pg-cluster.sh), stops both standbys with SIGSTOP so that commits wait for them, sends WRITERS inserts
 * (their commits wait), keeps READERS sessions counting the rows, and kills the primary's postmaster with -9.
 * No insert is acknowledged and no standby holds one, yet a reader may count them: a backend whose wait ends
 * because the postmaster died makes its commit visible, and the other backends run queries until they notice.
 * A node that applies such a commit finds it missing after the failover, and must start again from the store.
 * Prints, per try, the most rows a reader counted; exits 0 either way (it is a probe, not a test).
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"

const SCRIPT = path.join(import.meta.dirname, "pg-cluster.sh")
const int = (name: string, fallback: number) => {
  const n = Number(process.env[name] ?? fallback)
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer`)
  return n
}
const TRIES = int("TRIES", 6)
const WRITERS = int("WRITERS", 8)
const READERS = int("READERS", 8)
const BASE_PORT = int("BASE_PORT", 23460)

const cluster = (...args: Array<string>) => execFileSync("bash", [SCRIPT, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
const postmaster = (dir: string, node: string) => Number(fs.readFileSync(path.join(dir, node, "postmaster.pid"), "utf8").split("\n")[0])
/** SIGSTOP or SIGCONT to a server's postmaster and its children (walreceiver included). */
const signalServer = (dir: string, node: string, signal: "SIGSTOP" | "SIGCONT") => {
  const pm = postmaster(dir, node)
  const children = fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p)).filter((p) => {
    try {
      return Number(fs.readFileSync(`/proc/${p}/stat`, "utf8").replace(/^.*\) /, "").split(" ")[1]) === pm
    } catch {
      return false
    }
  })
  for (const pid of [pm, ...children.map(Number)]) process.kill(pid, signal)
}
const connect = async () => {
  const c = new pg.Client({ host: "127.0.0.1", port: BASE_PORT, user: "postgres", database: "writeonce" })
  c.on("error", () => undefined) // the server is killed under it
  await c.connect()
  return c
}

let revealed = 0
for (let t = 1; t <= TRIES; t++) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wo-probe-"))
  cluster("start", dir, String(BASE_PORT))
  try {
    const setup = await connect()
    await setup.query("create table probe (v int)")
    const writers = await Promise.all(Array.from({ length: WRITERS }, connect))
    const readers = await Promise.all(Array.from({ length: READERS }, connect))
    for (const s of ["s1", "s2"]) signalServer(dir, s, "SIGSTOP")
    const outcomes = writers.map((w, i) => w.query("insert into probe values ($1)", [i]).then(() => "acknowledged", () => "failed"))
    await new Promise((r) => setTimeout(r, 300))
    let most = 0
    const counting = readers.map(async (r) => {
      for (;;) {
        try {
          most = Math.max(most, (await r.query<{ n: number }>("select count(*)::int as n from probe")).rows[0].n)
        } catch {
          return // this backend noticed the postmaster's death
        }
      }
    })
    await new Promise((r) => setTimeout(r, 20))
    process.kill(postmaster(dir, "primary"), "SIGKILL")
    await Promise.all(counting)
    const acknowledged = (await Promise.all(outcomes)).filter((o) => o === "acknowledged").length
    if (most > 0 && acknowledged === 0) revealed++
    console.log(`try ${t}: ${acknowledged} of ${WRITERS} inserts acknowledged; a reader counted at most ${most} rows`)
    for (const s of ["s1", "s2"]) signalServer(dir, s, "SIGCONT")
  } finally {
    try {
      cluster("stop", dir)
    } catch {
      // a server left stopped: stop below removes what is left of the dir anyway
    }
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
console.log(`\nunacknowledged commits seen by readers in ${revealed} of ${TRIES} tries`)
