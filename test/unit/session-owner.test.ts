/** A legacy session's id names the principal that opened it. */
import { describe, expect, it } from "vitest"
import { ownedSessionId, sessionOwnedBy } from "../../src/access/session-owner.ts"

describe("session ownership", () => {
  it("a session is its opener's only; one opened without a scope is only for callers without one", () => {
    const mine = ownedSessionId("abc123", "librarian")
    expect(sessionOwnedBy(mine, "librarian")).toBe(true)
    expect(sessionOwnedBy(mine, "desk")).toBe(false)
    expect(sessionOwnedBy(mine, undefined)).toBe(false)
    expect(sessionOwnedBy("abc123", undefined)).toBe(true)
    expect(sessionOwnedBy("abc123", "librarian")).toBe(false)
    // Another scope's digest on the same random part is another id.
    expect(ownedSessionId("abc123", "desk")).not.toBe(mine)
    expect(sessionOwnedBy(".x", "desk")).toBe(false)
  })
})
