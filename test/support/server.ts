/** Test servers: the real runtime in-process (port 0, a temp classic-level dir), or the real `wo` binary. */
import { Effect, Layer, ManagedRuntime } from "effect"
import { spawn, type ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as nodeHttp from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import type { AppDef } from "../../src/domain/catalog.ts"
import { loadSettings, type Settings } from "../../src/config.ts"
import { HttpServer } from "../../src/http/server.ts"
import { writeOnceLayer } from "../../src/runtime.ts"
import blog from "../../examples/blog/app.ts"
import pricing from "../../examples/pricing/app.ts"

export const apps = { blog, pricing }
export const ROOT = path.resolve(import.meta.dirname, "../..")

export const tempDir = (prefix = "wo-test-") => fs.mkdtempSync(path.join(os.tmpdir(), prefix))

export interface TestServer<R> {
  readonly url: string
  readonly dataDir: string
  readonly runtime: ManagedRuntime.ManagedRuntime<R, unknown>
  readonly close: () => Promise<void>
}

/** Starts the whole runtime in this process; `extra` can provide test-only services such as LogFaults. */
export const startServer = async (
  app: AppDef,
  overrides: Partial<Settings> = {},
  extra: Layer.Layer<never> = Layer.empty
) => {
  const dataDir = overrides.dataDir ?? tempDir()
  const settings = await Effect.runPromise(loadSettings({ dataDir }, { host: "127.0.0.1", port: 0, ...overrides }))
  const runtime = ManagedRuntime.make(writeOnceLayer(app, settings).pipe(Layer.provide(extra)))
  const { url } = await runtime.runPromise(HttpServer)
  return { url, dataDir, runtime, close: () => runtime.dispose() }
}

export interface SpawnedServer {
  readonly url: string
  readonly child: ChildProcess
  readonly output: () => string
  readonly stop: (signal?: NodeJS.Signals) => Promise<number | null>
}

/** Spawns `wo run <app>` as a real process and waits for its URL. */
export const spawnServer = (appDir: string, dataDir: string, env: Record<string, string> = {}): Promise<SpawnedServer> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, "bin/wo.mjs"), "run", appDir, "--data", dataDir, "--listen", "127.0.0.1:0"], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)))
    const onData = (chunk: Buffer) => {
      out += chunk.toString()
      const m = /serving app "[^"]+" \([^)]*\) at (http:\/\/[^\s]+)/.exec(out)
      if (m) {
        child.stdout!.off("data", onData)
        child.stdout!.on("data", (c: Buffer) => (out += c.toString()))
        resolve({
          url: m[1],
          child,
          output: () => out,
          stop: (signal = "SIGTERM") => {
            if (child.exitCode === null) child.kill(signal)
            return exited
          }
        })
      }
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", (c: Buffer) => (out += c.toString()))
    child.once("exit", (code) => reject(new Error(`wo exited (${code}) before serving:\n${out}`)))
    setTimeout(() => reject(new Error(`wo did not start in time:\n${out}`)), 30_000).unref()
  })

/** Runs the `wo` binary to completion. */
export const runWo = (args: ReadonlyArray<string>): Promise<{ code: number | null; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, "bin/wo.mjs"), ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()))
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()))
    child.once("exit", (code) => resolve({ code, stdout, stderr }))
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
