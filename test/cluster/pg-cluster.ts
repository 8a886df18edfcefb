/**
 * A real PostgreSQL cluster for tests (scripts/pg-cluster.sh: a primary and two synchronous standbys on
 * loopback), and `wo run --store` nodes over it. No mocks: servers are killed with -9 and standbys promoted.
 *
 * A file that kills, pauses or promotes servers starts a cluster of its own (`startCluster`); the others share one
 * for the whole run (`sharedCluster`), each in databases of its own: a cluster start costs seconds of a loaded
 * machine, and one in the run serves them all.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import pg from "pg"
import { inject } from "vitest"
import { spawnWo, type Spawned } from "../../testkit/spawn.ts"
import { http, ROOT, tempDir } from "../../testkit/server.ts"
import { childrenOf, signalIfRunning, stopClusterNow } from "./stop-cluster.ts"

const SCRIPT = path.join(ROOT, "scripts/pg-cluster.sh")

/** The same search as the script's: Debian's layout, else initdb on PATH. */
export const haveBinaries = (() => {
  try {
    if (fs.readdirSync("/usr/lib/postgresql").some((v) => fs.existsSync(`/usr/lib/postgresql/${v}/bin/initdb`))) return true
  } catch {
    // not Debian's layout
  }
  return (process.env.PATH ?? "").split(":").some((d) => d !== "" && fs.existsSync(path.join(d, "initdb")))
})()

export const warnIfSkipped = (what: string) => {
  if (!haveBinaries) console.warn(`\n*** SKIPPED: ${what} need PostgreSQL's binaries (Debian: apt-get install postgresql-15) ***\n`)
}

const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = net.createServer()
    server.once("error", () => resolve(false))
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
  })

export type PgNode = "primary" | "s1" | "s2"

export interface PgCluster {
  readonly dir: string
  /** The URL listing all three hosts, for the database `database`. */
  readonly url: (database: string) => string
  readonly port: (node: PgNode) => number
  /** The node that takes writes now (changes after `promote`). */
  readonly primary: () => PgNode
  readonly createDatabase: (name: string) => Promise<string>
  /** One statement on the current primary. */
  readonly sql: <A extends pg.QueryResultRow = any>(database: string, text: string, values?: Array<unknown>) => Promise<Array<A>>
  /** kill -9 of the node's postmaster. */
  readonly kill: (node: PgNode) => void
  /**
   * `pg-cluster.sh start`: starts whatever is not running (a killed standby comes back and catches up), every
   * node but the current primary as its standby (an old primary rewound first).
   */
  readonly restart: () => void
  /** Starts the node's server as it is, bypassing the script: an old primary comes back writable (the operator's mistake). */
  readonly startAsIs: (node: PgNode) => void
  /** SIGSTOP (true) or SIGCONT (false) to every process of the node's server: a paused primary, not a dead one. */
  readonly pause: (node: PgNode, paused: boolean) => void
  /**
   * Promotes the most advanced standby and points the other at it; returns the promoted node. Naming a node
   * promotes that one whatever it holds (the operator's mistake).
   */
  readonly promote: (node?: PgNode) => PgNode
  /** Stops every server at once (no shutdown checkpoint) and deletes the dir, unless WO_KEEP_PG is set. */
  readonly stop: () => void
}

const run = (...args: Array<string>) => execFileSync("bash", [SCRIPT, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })

/** A free base port for a cluster: it and the next two free now. */
const freeBasePort = async () => {
  for (;;) {
    // Below Linux's ephemeral range (32768+), where outgoing connections could take a port meanwhile.
    const base = 20_000 + Math.floor(Math.random() * 12_000)
    if ((await portFree(base)) && (await portFree(base + 1)) && (await portFree(base + 2))) return base
  }
}

/** A cluster of the file's own, stopped (and its dir removed) by `stop`: for tests that kill, pause or promote. */
export const startCluster = async (): Promise<PgCluster> => {
  const dir = tempDir("wo-pgc-")
  const base = await freeBasePort()
  run("start", dir, String(base))
  return clusterAt(dir, base)
}

/** What the shared cluster refuses: anything that would disturb the other files using it. */
const DISRUPTIVE = ["kill", "restart", "startAsIs", "pause", "promote"] as const

/**
 * The run's shared cluster (test/cluster/shared-cluster-setup.ts). The first file to ask starts it, the others
 * wait for it; the run's teardown stops it. `stop` is a no-op, and killing, pausing or promoting a server throws:
 * use `startCluster` for that. Without the run's setup (another vitest config), a cluster of the file's own.
 */
export const sharedCluster = async (): Promise<PgCluster> => {
  const coordination = inject("sharedPgDir")
  if (coordination === undefined) return startCluster()
  const dir = path.join(coordination, "cluster")
  const ready = path.join(coordination, "ready.json")
  const failed = path.join(coordination, "failed.txt")
  let starter = true
  try {
    fs.mkdirSync(dir) // atomic: exactly one file starts the cluster
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
    starter = false
  }
  if (starter) {
    try {
      const base = await freeBasePort()
      run("start", dir, String(base))
      fs.writeFileSync(`${ready}.tmp`, JSON.stringify({ base }))
      fs.renameSync(`${ready}.tmp`, ready)
    } catch (e) {
      fs.writeFileSync(failed, String((e as { stderr?: string }).stderr || e))
      throw e
    }
  } else {
    // Another file is starting it: wait for its outcome (a cluster start takes seconds, more on a loaded machine).
    for (let i = 0; !fs.existsSync(ready); i++) {
      if (fs.existsSync(failed)) throw new Error(`the shared PostgreSQL cluster failed to start:\n${fs.readFileSync(failed, "utf8")}`)
      if (i >= 3000) throw new Error("the shared PostgreSQL cluster did not start within 300 s")
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  const { base } = JSON.parse(fs.readFileSync(ready, "utf8")) as { base: number }
  const cluster = clusterAt(dir, base)
  const refuse = (what: string) => () => {
    throw new Error(`${what} on the shared PostgreSQL cluster would disturb the other files using it: use startCluster()`)
  }
  return {
    ...cluster,
    ...Object.fromEntries(DISRUPTIVE.map((m) => [m, refuse(m)])),
    stop: () => undefined
  }
}

/** The cluster the script started in `dir` on `base`, as the tests drive it. */
const clusterAt = (dir: string, base: number): PgCluster => {
  const ports: Record<PgNode, number> = { primary: base, s1: base + 1, s2: base + 2 }
  let primary: PgNode = "primary"
  const sql = async <A extends pg.QueryResultRow = any>(database: string, text: string, values?: Array<unknown>) => {
    const c = new pg.Client({ host: "127.0.0.1", port: ports[primary], user: "postgres", database })
    await c.connect()
    try {
      return (await c.query<A>(text, values)).rows
    } finally {
      await c.end()
    }
  }
  const url = (database: string) => `postgres://postgres@127.0.0.1:${base},127.0.0.1:${base + 1},127.0.0.1:${base + 2}/${database}?connect_timeout=2`
  return {
    dir,
    url,
    port: (node) => ports[node],
    primary: () => primary,
    createDatabase: async (name) => {
      await sql("postgres", `create database ${name}`)
      return url(name)
    },
    sql,
    kill: (node) => void run("kill", dir, node),
    restart: () => void run("start", dir),
    startAsIs: (node) => {
      const bin = fs.readdirSync("/usr/lib/postgresql").sort().map((v) => `/usr/lib/postgresql/${v}/bin/pg_ctl`).filter((f) => fs.existsSync(f)).pop() ?? "pg_ctl"
      const args = ["-D", path.join(dir, node), "-l", path.join(dir, `${node}.log`), "-w", "-t", "60", "start"]
      if (process.getuid?.() === 0) execFileSync("runuser", ["-u", "postgres", "--", bin, ...args], { stdio: "ignore" })
      else execFileSync(bin, args, { stdio: "ignore" })
    },
    pause: (node, paused) => {
      // The postmaster and its children (backends, walsenders): stopping the postmaster alone leaves backends answering.
      // The postmaster first, so that no child forks after the list is read.
      const postmaster = Number(fs.readFileSync(path.join(dir, node, "postmaster.pid"), "utf8").split("\n")[0])
      const signal = paused ? "SIGSTOP" : "SIGCONT"
      signalIfRunning(postmaster, signal)
      for (const pid of childrenOf(postmaster)) signalIfRunning(pid, signal)
    },
    promote: (node) => (primary = run("promote", dir, ...(node === undefined ? [] : [node])).trim().split("\n").pop() as PgNode),
    stop: () => {
      stopClusterNow(dir)
      if (process.env.WO_KEEP_PG === undefined) fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** Each started node's data dir, where it keeps what it has seen of the store (a restart reuses it). */
const dataDirs = new WeakMap<Spawned, string>()

/** `wo run examples/pricing --store <url>` on a data dir of its own (by default a new one). */
export const startNode = async (storeUrl: string, env: Record<string, string> = {}, dataDir = tempDir("wo-node-")): Promise<Spawned> => {
  const node = await spawnWo(["run", "examples/pricing", "--listen", "127.0.0.1:0", "--data", dataDir, "--store", storeUrl], {
    env: { WO_MAX_PAGE_SIZE: "100000", ...env }
  })
  dataDirs.set(node, dataDir)
  return node
}

export interface Ack {
  readonly id: string
  readonly version: number
  readonly price: number
  /** The node that answered. */
  readonly node: number
}

/**
 * Products created and repriced through the given nodes, round-robin, `inFlight` requests at once. Every ack is
 * recorded; after each, the acking node is read back (read-your-writes), and any node that answers an older
 * version is counted. A request that is not acknowledged is kept as what it got back (its status and body, or the
 * error that cut it short), so that a test that expects none says which.
 */
export const writeLoad = (nodes: () => ReadonlyArray<string | undefined>, inFlight = 32) => {
  const acked: Array<Ack> = []
  const ids: Array<string> = []
  let stopped = false
  const failures: Array<string> = []
  let staleReads = 0
  let turn = 0
  const worker = async (w: number) => {
    for (let i = 0; !stopped; i++) {
      const list = nodes()
      const n = turn++ % list.length
      const base = list[n]
      if (base === undefined) continue
      const price = w * 1_000_000 + i + 1
      try {
        const res = ids.length < 8 || i % 4 === 0
          ? await http(`${base}/api/products`, { method: "POST", body: { name: `p${w}-${i}`, price, currency: "USD" } })
          : await http(`${base}/api/products/${ids[(w + i) % ids.length]}/set_price`, { method: "POST", body: { price } })
        if (res.status === 200 || res.status === 201) {
          acked.push({ id: res.json.id, version: res.json.version, price, node: n })
          if (res.json.version === 1) ids.push(res.json.id)
          const back = await http(`${base}/api/products/${res.json.id}`)
          if (back.status !== 200 || back.json.version < res.json.version) staleReads++
        } else failures.push(`node ${n}: ${res.status} ${res.text.slice(0, 300)}`)
      } catch (e) {
        // A node (or the primary) was killed under it: not acknowledged.
        failures.push(`node ${n}: ${e instanceof Error ? `${e.message} ${String(e.cause ?? "")}` : String(e)}`)
        await new Promise((r) => setTimeout(r, 20))
      }
    }
  }
  const workers = Array.from({ length: inFlight }, (_, w) => worker(w))
  return {
    acked,
    errors: () => failures.length,
    failures: () => failures,
    staleReads: () => staleReads,
    stop: async () => {
      stopped = true
      await Promise.all(workers)
    }
  }
}

/** The acks missing from the log (by id, version and price): must be none. */
export const missingAcks = async (cluster: PgCluster, database: string, acked: ReadonlyArray<Ack>) => {
  const events = await cluster.sql<{ id: string; version: number; price: string }>(
    database,
    "select id, version, data->>'price' as price from writeonce.events where type = 'products'"
  )
  const stored = new Map(events.map((e) => [`${e.id}@${e.version}`, Number(e.price)]))
  return acked.filter((a) => stored.get(`${a.id}@${a.version}`) !== a.price)
}

/** The latest row per id in the log, as every node must eventually serve it. */
export const latestRows = async (cluster: PgCluster, database: string) => {
  const rows = await cluster.sql<{ id: string; version: number }>(database, "select id, version from writeonce.rows where type = 'products' and row is not null")
  return new Map(rows.map((r) => [r.id, r.version]))
}

/** What a node prints when it exits because the log lost a commit it had applied (tailer.ts, follow.ts). */
const DIVERGED = /the log no longer has event \d+, which this node applied.*exiting so that a supervisor restarts the server from the store/s

/**
 * The supervisor's part after a kill -9 of the primary. Killing the postmaster ends its backends' waits for the
 * standbys: a commit never acknowledged then shows to the other backends still running for a moment, and the
 * promoted standby lacks it. A node that applied one finds it gone and exits (status 1) to be started again from
 * the store. Such a node is started again here; any other exit throws. The indexes of the nodes started again.
 */
export const restartDiverged = async (nodes: Array<Spawned | undefined>, storeUrl: string) => {
  const restarted: Array<number> = []
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i]
    if (node === undefined || node.exitReport() === undefined) continue
    if (!DIVERGED.test(node.output())) throw new Error(`node ${i} ${node.exitReport()}\n${node.output().slice(-8192)}`)
    // On its own data dir, as a supervisor restarts it: it remembers the promoted primary's timeline. A fresh one
    // would refuse to choose while the killed primary, which it cannot compare, is unreachable.
    nodes[i] = await startNode(storeUrl, {}, dataDirs.get(node))
    restarted.push(i)
  }
  return restarted
}

/**
 * `convergeOn` for a node this test started, explained: [] once it serves every row at its latest version; else a
 * line per row it lags on (what it serves, what the log holds for it) and the tail of the node's output.
 */
export const lagsOf = async (cluster: PgCluster, database: string, node: Spawned, latest: ReadonlyMap<string, number>) => {
  const output = () => `--- the node's output, last 8 KB ---\n${node.output().slice(-8192)}`
  const behind = await convergeOn(node.loopbackUrl, latest).catch((e: unknown) => e as Error)
  if (behind instanceof Error) return [`${behind.message}; the node ${node.exitReport() ?? "runs"}`, output()]
  if (behind.length === 0) return []
  const served = new Map<string, number>(
    ((await http(`${node.loopbackUrl}/api/products?limit=100000`)).json.items as Array<{ id: string; version: number }>).map((r) => [r.id, r.version])
  )
  const events = await cluster.sql<{ seq: string; id: string; version: number }>(
    database,
    "select seq, id, version from writeonce.events where type = 'products' and id = any($1) order by seq",
    [behind]
  )
  const lines = behind.map((id) =>
    `products ${id}: served at version ${served.get(id) ?? "none"}, latest ${latest.get(id)}; in the log at seqs ` +
    events.filter((e) => e.id === id).map((e) => `${e.seq} (v${e.version})`).join(", "))
  return [...lines, output()]
}

/** Polls (by count, not by time) until the node serves every row at its latest version; the rows it lags on. */
export const convergeOn = async (base: string, latest: ReadonlyMap<string, number>, polls = 200) => {
  let behind: Array<string> = []
  for (let i = 0; i < polls; i++) {
    const res = await http(`${base}/api/products?limit=100000`)
    const served = new Map<string, number>((res.json.items as Array<{ id: string; version: number }>).map((r) => [r.id, r.version]))
    behind = [...latest].filter(([id, v]) => served.get(id) !== v).map(([id]) => id)
    if (behind.length === 0) return []
    await new Promise((r) => setTimeout(r, 50))
  }
  return behind
}
