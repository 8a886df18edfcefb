/**
 * The synchronous reads of a node caching PostgreSQL's rows (src/log/postgres/sync-reads.ts) are bounded: against a
 * server that accepts connections and never answers (a paused primary), a read fails as a StoreError once
 * WO_STORE_TIMEOUT passes instead of holding the thread, and the next read is bounded alike. The peer is a real TCP
 * server on port 0 that reads and never writes; the reads run the real `pg` client in the real worker thread.
 */
import * as net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeSyncReads } from "../../src/log/postgres/sync-reads.ts"
import { waitFor } from "../../testkit/wait.ts"

describe("synchronous reads of the PostgreSQL store", () => {
  let server: net.Server
  let port = 0
  const sockets: Array<net.Socket> = []
  beforeAll(async () => {
    server = net.createServer((socket) => {
      sockets.push(socket)
      socket.on("data", () => undefined)
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    port = (server.address() as net.AddressInfo).port
  })
  afterAll(async () => {
    for (const s of sockets) s.destroy()
    await new Promise((resolve) => server.close(resolve))
  })

  it("fail as a StoreError past the bound when the server never answers, each read alike", async () => {
    const reads = makeSyncReads(() => ({ host: "127.0.0.1", port, user: "postgres", database: "x", connectionTimeoutMillis: 60_000 }), 300)
    try {
      const failures: Array<unknown> = []
      for (let i = 0; i < 2; i++) {
        try {
          reads.query("cannot read a row", "select 1")
        } catch (e) {
          failures.push(e)
        }
      }
      expect(failures).toHaveLength(2)
      for (const e of failures) {
        expect(e).toMatchObject({ _tag: "StoreFailed" })
        expect(String((e as { reason: string }).reason)).toMatch(/^cannot read a row: the primary did not answer within 300 ms/)
      }
      // The peer was reached (its accept runs once this thread turns again): the reads waited on a server.
      expect(await waitFor(() => sockets.length > 0, 10_000)).toBe(true)
    } finally {
      await reads.close()
    }
  }, 30_000)
})
