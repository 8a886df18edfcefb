/** The settings as `wo run` reads them, from the given environment only (not the test process's), as a layer. */
import { ConfigProvider, Effect, Layer } from "effect"
import { loadSettings, WoConfig } from "../src/support/config.ts"

export const settingsFrom = (env: Record<string, string> = {}) =>
  Layer.effect(
    WoConfig,
    loadSettings({ dataDir: "/nonexistent" }).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
  )
