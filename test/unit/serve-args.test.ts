/**
 * `wo run` and `wo dev` read without @effect/cli (src/cli/serve-args.ts): a plain, well-formed command line only;
 * everything else is left to cli.ts (undefined here), so help and usage errors stay @effect/cli's own.
 */
import { describe, expect, it } from "vitest"
import { readServeArgs } from "../../src/cli/serve-args.ts"

describe("readServeArgs", () => {
  it("reads every option of run, in any order, and dev's", () => {
    expect(readServeArgs(["run", "examples/blog", "--data", "d", "--listen", "127.0.0.1:0", "--insecure", "--accept-data-loss", "--record", "r.http", "--store", "postgres://x/db"]))
      .toEqual({
        command: "run",
        options: { appDir: "examples/blog", data: "d", listen: "127.0.0.1:0", insecure: true, acceptDataLoss: true, record: "r.http", store: "postgres://x/db" }
      })
    expect(readServeArgs(["dev", "--listen", "1", "examples/pricing"])).toEqual({
      command: "dev",
      options: { appDir: "examples/pricing", data: undefined, listen: "1", insecure: false, acceptDataLoss: false, record: undefined, store: undefined }
    })
  })

  it.each([
    [["init", "x"]],
    [["run"]],
    [["run", "--help"]],
    [["run", "examples/blog", "-h"]],
    [["run", "examples/blog", "--port", "1"]],
    [["run", "examples/blog", "--data=d"]],
    [["run", "examples/blog", "--data"]],
    [["run", "examples/blog", "--data", "a", "--data", "b"]],
    [["run", "examples/blog", "--insecure", "true"]],
    [["run", "no/such/app"]],
    [["run", "examples/blog", "examples/pricing"]],
    [["dev", "examples/blog", "--store", "postgres://x/db"]]
  ])("leaves %j to the full command line", (args) => {
    expect(readServeArgs(args)).toBeUndefined()
  })
})
