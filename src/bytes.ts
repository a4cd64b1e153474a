/**
 * A Buffer view of a chunk's bytes, for Buffer's native searches (indexOf, compare), without a copy.
 * A chunk that is a Buffer already is its own view: asking a small typed array for its `.buffer`
 * makes JavaScriptCore give it an ArrayBuffer of its own (an allocation and a copy), which cost a
 * metered stream about a third of its relay time when every chunk the meter rewrote was asked again
 * by the key mask (docs/metering.md, "What a metered call costs").
 */
export const asBuffer = (c: Uint8Array): Buffer => (Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength))
