/** The compiled catalog as a service: every surface (REST, MCP, console) reads the same one. */
import { Context, Effect, Layer } from "effect"
import type { AppDef } from "./catalog.ts"
import { compileApp, type CompiledApp } from "./compile.ts"

export class Catalog extends Context.Tag("writeonce/Catalog")<Catalog, CompiledApp>() {
  /** Validates and compiles `app`; fails with a CatalogError naming each bad type and field. */
  static readonly layer = (app: AppDef) => Layer.effect(Catalog, Effect.suspend(() => compileApp(app)))
}
