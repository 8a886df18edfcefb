/**
 * How this process registered the app loader (app-loader.ts), readable without loading the loader itself (tsx): a
 * worker thread that loads the app registers the same one (app-worker.ts).
 */

/** How apps are loaded (app-loader.ts `registerAppLoader`). */
export interface AppLoaderOptions {
  /** Register tsx too (default true); false when the caller already did, to run its own TypeScript. */
  readonly tsx?: boolean
  /** Resolve `writeonce` to this checkout's sources (the `writeonce-source` condition). */
  readonly sources?: boolean
  /**
   * Resolve `writeonce` and `writeonce/testing` to this folder's `index.mjs` and `testing/index.mjs` instead: the
   * checkout's sources as bin/built-sources.mjs built them, which the runtime itself was loaded from.
   */
  readonly built?: string
}

/**
 * How this process registered the loader, so that a worker thread can load an app the same way (`wo dev` loads
 * each saved version in one first): loader hooks belong to the thread that registers them.
 */
export interface RegisteredAppLoader {
  /** tsx's registration module, to register first (app-loader.ts is TypeScript in a checkout). */
  readonly tsx: string
  /** app-loader.ts itself. */
  readonly loader: string
  readonly options: AppLoaderOptions
  /** The runtime that apps import as `writeonce`, when this process knows it (a worker preloads it). */
  readonly runtime: string
}

// Kept on the global object: the `wo` launcher loads this module from its file while `wo dev`'s runtime may be a
// bundle holding a copy of it, and both must see the one registration.
export const REGISTERED = Symbol.for("writeonce.registeredAppLoader")
export const registry = globalThis as { [REGISTERED]?: RegisteredAppLoader }

/** The loader this process registered, or undefined if it registered none. */
export const registeredAppLoader = (): RegisteredAppLoader | undefined => registry[REGISTERED]
