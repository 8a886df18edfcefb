/**
 * A full garbage collection, run by `wo dev` after each reload. A reload leaves a whole generation behind (its
 * catalog, routes, writer and the start's own allocations, about 0.8 MB), and V8 grows its heap before it collects
 * them, so the resident size climbs by tens of megabytes over a hundred reloads although nothing stays reachable.
 * A dev server waits for the next save: collecting now costs a few milliseconds that no request notices.
 * Node hands out `gc` only under --expose-gc; the flag, set now, applies to contexts made after it, so a fresh
 * context fetches it once.
 */
import * as v8 from "node:v8"
import * as vm from "node:vm"

let gc: (() => void) | undefined

export const collectGarbage = (): void => {
  if (gc === undefined) {
    const exposed = (globalThis as { gc?: () => void }).gc
    if (exposed !== undefined) gc = exposed
    else {
      v8.setFlagsFromString("--expose-gc")
      gc = vm.runInNewContext("gc") as () => void
      v8.setFlagsFromString("--no-expose-gc")
    }
  }
  gc()
}
