/** Test servers: the real runtime in-process (port 0, a temp classic-level dir), or the real `wo` binary. */
import { Effect, Layer, ManagedRuntime } from "effect"
import * as fs from "node:fs"
import * as nodeHttp from "node:http"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import type { AppDef } from "../src/domain/catalog.ts"
import { loadSettings, type Settings } from "../src/support/config.ts"
import { HttpServer } from "../src/http/server.ts"
import { writeOnceLayer } from "../src/runtime/runtime.ts"
import { faultInjectingLog } from "./log-faults.ts"
import blog from "../examples/blog/app.ts"
import pricing from "../examples/pricing/app.ts"
import { runWo as runWoProcess, spawnWo, type Spawned } from "./spawn.ts"

export const apps = { blog, pricing }
export const ROOT = path.resolve(import.meta.dirname, "..")

export const tempDir = (prefix = "wo-test-") => fs.mkdtempSync(path.join(os.tmpdir(), prefix))

export interface TestServer<R> {
  readonly url: string
  readonly dataDir: string
  readonly runtime: ManagedRuntime.ManagedRuntime<R, unknown>
  readonly close: () => Promise<void>
}

/**
 * Starts the whole runtime in this process. `extra` can provide test-only services: LogFaults (log-faults.ts)
 * decorates the real classic-level log.
 */
export const startServer = async (
  app: AppDef,
  overrides: Partial<Settings> = {},
  extra: Layer.Layer<never> = Layer.empty
) => {
  const dataDir = overrides.dataDir ?? tempDir()
  const settings = await Effect.runPromise(loadSettings({ dataDir }, { host: "127.0.0.1", port: 0, ...overrides }))
  const runtime = ManagedRuntime.make(writeOnceLayer(app, settings, { log: faultInjectingLog }).pipe(Layer.provide(extra)))
  const { url } = await runtime.runPromise(HttpServer)
  return { url, dataDir, runtime, close: () => runtime.dispose() }
}

export type SpawnedServer = Spawned

/** Spawns `wo run <app>` on 127.0.0.1:0 as a real process (testkit/spawn.ts) and waits for its URL. */
export const spawnServer = (appDir: string, dataDir: string, env: Record<string, string> = {}): Promise<SpawnedServer> =>
  spawnWo(["run", appDir, "--data", dataDir, "--listen", "127.0.0.1:0"], { env })

/** Runs the `wo` binary to completion, with no deadline. */
export const runWo = (args: ReadonlyArray<string>): Promise<{ code: number | null; stdout: string; stderr: string }> =>
  runWoProcess(args, { timeoutMs: Infinity })

/** A port free now (the OS picked it), for a process that must bind a port it was told. */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = net.createServer()
    s.once("error", reject)
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })

/** A JSON request helper over fetch. */
export const http = async (url: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) => {
  const res = await fetch(url, {
    method: init.method ?? "GET",
    headers: { ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers },
    body: init.body === undefined ? undefined : typeof init.body === "string" ? init.body : JSON.stringify(init.body)
  })
  const text = await res.text()
  let json: any
  try {
    json = text ? JSON.parse(text) : undefined
  } catch {
    json = undefined
  }
  return { status: res.status, headers: res.headers, text, json }
}

/** A request over node:http, for headers fetch will not send as given (Host, Origin). */
export const rawRequest = (
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {}
): Promise<{ status: number; headers: import("node:http").IncomingHttpHeaders; text: string; json: any }> =>
  new Promise((resolve, reject) => {
    const req = nodeHttp.request(url, { method: init.method ?? "GET", headers: init.headers }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (c: string) => (text += c))
      res.on("end", () => {
        let json: any
        try {
          json = text ? JSON.parse(text) : undefined
        } catch {
          json = undefined
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json })
      })
    })
    req.on("error", reject)
    req.end(init.body)
  })
