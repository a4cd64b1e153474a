/**
 * A Buffer view of a chunk's bytes, for Buffer's native searches (indexOf, compare), without a copy.
 * A chunk that is a Buffer already is its own view: asking a small typed array for its `.buffer`
 * makes JavaScriptCore give it an ArrayBuffer of its own (an allocation and a copy), which cost a
 * metered stream about a third of its relay time when every chunk the meter rewrote was asked again
 * by the key mask (docs/metering.md, "What a metered call costs").
 */
export const asBuffer = (c: Uint8Array): Buffer => (Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength))

const bufferIndexOf = Buffer.prototype.indexOf

/**
 * Buffer's native search (a byte sequence or a byte) over any Uint8Array, with no Buffer view made
 * at all: an upstream chunk is a plain Uint8Array, and its `.buffer` alone cost 0.2 µs, several
 * times the search, on each chunk the meter reads (bench/relay-cost.ts).
 */
export const indexOfBytes = (c: Uint8Array, needle: Uint8Array | number, from = 0): number => bufferIndexOf.call(c as Buffer, needle, from)

const bufferCopy = Buffer.prototype.copy

/**
 * Buffer's native copy of src[srcStart, srcEnd) into target at targetStart, for any Uint8Array
 * source: a subarray of a plain Uint8Array (to `set` it) makes it an ArrayBuffer first, as
 * `.buffer` does. Returns the bytes copied.
 */
export const copyBytes = (src: Uint8Array, target: Uint8Array, targetStart: number, srcStart: number, srcEnd: number): number =>
  bufferCopy.call(src as Buffer, target, targetStart, srcStart, srcEnd)

/** Whether `b` holds `want` at `at` (short constants: a loop beats a native call here). */
export function bytesAt(b: Uint8Array, at: number, want: Uint8Array): boolean {
  for (let i = 0; i < want.byteLength; i++) if (b[at + i] !== want[i]) return false
  return true
}
