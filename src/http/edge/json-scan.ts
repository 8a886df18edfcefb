/**
 * A JSON body's shape, read from its UTF-8 bytes chunk by chunk as they arrive (the edge feeds it each `data`
 * chunk): how deep it nests, and where each member of its top-level object starts, ends and has its key. With it,
 * a body's depth is checked and its excess keys are cut (excess-keys.ts) without another pass over its bytes
 * once it has all arrived: a body of megabytes costs the event loop a short step per chunk, not one long block
 * when it ends (measured: 4 clients sending 3.4 MB bodies of unknown keys made GETs wait 60x their idle p99).
 *
 * Strings are skipped (a multi-byte character is never one of the ASCII bytes looked for); an escape may straddle
 * two chunks. Only the syntax the cut relies on is read: JSON.parse still checks the text it is given.
 * Hand-tuned (a byte loop over typed arrays, no allocation per member but the arrays' growth): it runs on every
 * byte of every JSON body.
 */

const QUOTE = 34
const BACKSLASH = 92
const OPEN_OBJECT = 123
const OPEN_ARRAY = 91
const CLOSE_OBJECT = 125
const CLOSE_ARRAY = 93
const COMMA = 44
const COLON = 58

export class JsonScan {
  /** Bytes fed so far. */
  length = 0
  /** The deepest nesting of arrays and objects seen. */
  maxDepth = 0
  /** Members (colons) of the top-level object, or of a later top-level value (then JSON.parse refuses the body). */
  members = 0
  /** Where the first top-level value opens: -1 before it, and its byte (`{` or `[`) in `openByte`. */
  open = -1
  openByte = 0
  /** Where that value closes, -1 while it has not. */
  close = -1
  /**
   * The top-level object's members, three numbers each in `layout`: where its key's opening quote is (-1: none),
   * where its key ends (after the closing quote; negated when the key holds an escape), and the comma or brace
   * that ends it. `count` members are recorded. Five members at first: 60 bytes, which V8 keeps on its heap;
   * from 64 bytes on a typed array gets its own backing store, 20x dearer to make (one scan per JSON body).
   */
  layout = new Int32Array(15)
  count = 0

  private depth = 0
  private inString = false
  /** A backslash ended the last chunk: the next chunk's first byte is escaped. */
  private skip = false
  private keyStart = -1
  private keyEnd = -1
  private keyEscaped = false

  /** Reads the next chunk of the body. The state lives in locals while it runs (V8 keeps them in registers). */
  feed(chunk: Uint8Array): void {
    const base = this.length
    this.length += chunk.length
    let depth = this.depth
    let inString = this.inString
    let keyStart = this.keyStart
    let keyEnd = this.keyEnd
    let keyEscaped = this.keyEscaped
    let members = this.members
    let layout = this.layout
    let at = this.count * 3
    // Members are recorded only inside the first top-level value, and only when it is an object.
    let recording = this.close < 0 && this.openByte !== OPEN_ARRAY
    const n = chunk.length
    let i = 0
    if (this.skip) {
      this.skip = false
      i = 1
    }
    while (i < n) {
      let c = chunk[i]
      if (inString) {
        // Most of a body's bytes are in strings: a tight loop to the next quote or backslash.
        while (c !== QUOTE && c !== BACKSLASH && ++i < n) c = chunk[i]
        if (i >= n) break
        if (c === BACKSLASH) {
          if (depth === 1 && keyEnd < 0) keyEscaped = true
          i += 2
          if (i > n) this.skip = true
          continue
        }
        inString = false
        if (depth === 1 && keyEnd < 0) keyEnd = base + i + 1
      } else if (c === QUOTE) {
        inString = true
        if (depth === 1 && keyStart < 0) keyStart = base + i
      } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        if (depth++ === 0 && this.open < 0) {
          this.open = base + i
          this.openByte = c
          recording = c === OPEN_OBJECT
        }
        if (depth > this.maxDepth) this.maxDepth = depth
      } else if (depth === 1 || c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        if (c === COLON) members++
        else if (c === COMMA || c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
          const closing = c !== COMMA
          if (closing) depth--
          if (depth === 0 || (depth === 1 && !closing)) {
            if (recording) {
              if (at + 3 > layout.length) {
                const grown = new Int32Array(layout.length * 2)
                grown.set(layout)
                layout = grown
              }
              layout[at] = keyStart
              layout[at + 1] = keyEscaped ? -keyEnd : keyEnd
              layout[at + 2] = base + i
              at += 3
            }
            keyStart = -1
            keyEnd = -1
            keyEscaped = false
            if (closing && this.close < 0) {
              this.close = base + i
              recording = false
            }
          }
        }
      }
      i++
    }
    this.depth = depth
    this.inString = inString
    this.keyStart = keyStart
    this.keyEnd = keyEnd
    this.keyEscaped = keyEscaped
    this.members = members
    this.layout = layout
    this.count = at / 3
  }
}

/** The shape of a whole body at once (when no edge scanned it as it arrived). */
export const scanBody = (body: Uint8Array): JsonScan => {
  const scan = new JsonScan()
  scan.feed(body)
  return scan
}
