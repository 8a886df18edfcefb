// `npm run bench:smoke`: the benchmark harness's smoke run (bench/smoke.test.ts), kept out of `npm test`'s default
// path because it spawns a dozen servers. Everything else as in vitest.config.ts.
import { defineConfig } from "vitest/config"
import base from "./vitest.config.ts"

export default defineConfig({ ...base, test: { ...base.test, include: ["bench/smoke.test.ts"], testTimeout: 330_000 } })
