/**
 * Masks the injected provider key wherever an upstream echoes it back (an error message quoting
 * the key, a debug header). The mask has the key's length, so a Content-Length stays true.
 *
 * Streaming-safe: a chunk's tail that could be the start of the key is held back until the next
 * chunk decides it. Only such a tail is held, so SSE events (ending in "\n\n", which no key
 * starts with) still leave at once.
 */
const STAR = 0x2a
const EMPTY = new Uint8Array(0)

export function maskKey(text: string, key: string): string {
  return key && text.includes(key) ? text.split(key).join('*'.repeat(key.length)) : text
}

export class KeyScrubber {
  private readonly key: Buffer
  private held: Uint8Array = EMPTY

  constructor(key: string) {
    this.key = Buffer.from(key)
  }

  push(chunk: Uint8Array): Uint8Array {
    let buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    if (this.held.byteLength) buf = Buffer.concat([this.held, buf])
    let at = buf.indexOf(this.key)
    if (at !== -1) {
      // Never write into the upstream's buffer.
      if (!this.held.byteLength) buf = Buffer.from(buf)
      while (at !== -1) {
        buf.fill(STAR, at, at + this.key.length)
        at = buf.indexOf(this.key, at + this.key.length)
      }
    }
    const keep = this.partialKeyAtEnd(buf)
    this.held = keep ? Uint8Array.prototype.slice.call(buf, buf.length - keep) : EMPTY
    return keep ? buf.subarray(0, buf.length - keep) : buf
  }

  /** The held-back tail, at the end of the stream: it was not the key after all. */
  flush(): Uint8Array {
    const rest = this.held
    this.held = EMPTY
    return rest
  }

  /** Length of the longest proper prefix of the key that `buf` ends with. */
  private partialKeyAtEnd(buf: Buffer): number {
    const key = this.key
    for (let k = Math.min(key.length - 1, buf.length); k > 0; k--) {
      const start = buf.length - k
      if (buf[start] === key[0] && buf.compare(key, 0, k, start, buf.length) === 0) return k
    }
    return 0
  }
}
