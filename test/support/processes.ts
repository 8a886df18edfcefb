/**
 * The `wo` binary with arguments and environment of the test's choosing (spawnServer in server.ts always
 * listens on 127.0.0.1:0 and runWo has no environment or deadline), and a process's resident memory.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { ROOT, type SpawnedServer } from "./server.ts"

const WO = path.join(ROOT, "bin/wo.mjs")

/** This process's environment with `env` applied; an undefined value removes the variable. */
const environment = (env: Record<string, string | undefined>) => {
  const out: Record<string, string | undefined> = { ...process.env, ...env }
  for (const [k, v] of Object.entries(out)) if (v === undefined) delete out[k]
  return out as NodeJS.ProcessEnv
}

/** Runs `wo <args>` to completion, killing it (and saying so) if it is still running after `timeoutMs`. */
export const runWoTimed = (args: ReadonlyArray<string>, env: Record<string, string | undefined> = {}, timeoutMs = 20_000) =>
  new Promise<{ code: number | null; stdout: string; stderr: string; timedOut: boolean }>((resolve) => {
    const child = spawn(process.execPath, [WO, ...args], { cwd: ROOT, env: environment(env), stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    let timedOut = false
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()))
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()))
    const timer = setTimeout(() => {
      timedOut = true
      child.kill("SIGKILL")
    }, timeoutMs)
    child.once("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr, timedOut })
    })
  })

/**
 * Spawns `wo <args>` and resolves once it prints its URL. The URL is as printed (for a 0.0.0.0 bind, that
 * address); `loopbackUrl` is where this machine reaches it.
 */
export const spawnWo = (args: ReadonlyArray<string>, env: Record<string, string | undefined> = {}): Promise<SpawnedServer & { readonly loopbackUrl: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WO, ...args], { cwd: ROOT, env: environment(env), stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let ready = false
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)))
    const onData = (chunk: Buffer) => {
      out += chunk.toString()
      const m = /serving app "[^"]+" \([^)]*\) at (http:\/\/([^\s/]+):(\d+))/.exec(out)
      if (m && !ready) {
        ready = true
        resolve({
          url: m[1],
          loopbackUrl: `http://127.0.0.1:${m[3]}`,
          child,
          output: () => out,
          stop: (signal = "SIGTERM") => {
            if (child.exitCode === null && child.signalCode === null) child.kill(signal)
            return exited
          }
        })
      }
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", (c: Buffer) => (out += c.toString()))
    child.once("exit", (code) => ready || reject(new Error(`wo exited (${code}) before serving:\n${out}`)))
    setTimeout(() => {
      if (ready) return
      child.kill("SIGKILL")
      reject(new Error(`wo did not start in time:\n${out}`))
    }, 30_000).unref()
  })

/** VmRSS of a live process in KiB, from /proc/<pid>/status (Linux). */
export const rssKb = (pid: number): number => {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))
  if (!m) throw new Error(`no VmRSS for pid ${pid}`)
  return Number(m[1])
}
