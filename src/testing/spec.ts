/**
 * Named specs for `wo test`. A spec file (`*.spec.ts` in the app folder) calls `spec(name, body)` at its top
 * level; `wo test` imports the file, then runs what it registered. A body fails by throwing (as `then` and
 * `thenFails` of a decider spec do) or by returning a promise that rejects.
 */

export interface Spec {
  readonly name: string
  readonly body: () => void | Promise<void>
}

const registered: Array<Spec> = []

/** Registers a spec for `wo test`. */
export const spec = (name: string, body: () => void | Promise<void>): void => {
  registered.push({ name, body })
}

/** The specs registered since the last call, in order (the runner calls it after importing each spec file). */
export const takeSpecs = (): ReadonlyArray<Spec> => registered.splice(0)
