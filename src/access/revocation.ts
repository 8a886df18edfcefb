/**
 * Where revocation reaches the open streams: when the access file no longer names a principal (or changed it), the
 * streams it opened end. The streams are the HTTP layer's; it provides this service over them (open-streams.ts).
 */
import { Context } from "effect"
import type { Principal } from "./principal.ts"

export interface RevocationShape {
  /** Ends the open streams of every principal `gone` says is no longer in force; how many ended. */
  readonly endStreamsOf: (gone: (principal: Principal) => boolean) => number
}

export class Revocation extends Context.Tag("writeonce/Revocation")<Revocation, RevocationShape>() {}
