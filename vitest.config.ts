import { defineConfig } from "vitest/config"

export default defineConfig({
  // "writeonce" (the examples' and test apps' import) resolves to this checkout's sources, not to dist/; the rest
  // are Vite's default server conditions.
  ssr: { resolve: { conditions: ["writeonce-source", "module", "node", "development|production"] } },
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The same for the processes tests spawn with `node --import tsx` (bin/wo.mjs sets it itself).
    env: { NODE_OPTIONS: [process.env.NODE_OPTIONS, "--conditions=writeonce-source"].filter(Boolean).join(" ") }
  }
})
