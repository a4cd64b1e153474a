/**
 * Decoding an upstream body whose provider ignored our `accept-encoding: identity`. The response
 * cap and the key masking must see the bytes the client will read, not the compressed wire bytes
 * (10 KB of gzip can be 10 MB of zeros): callers fetch with `decompress: false` and decode here,
 * as a stream, so the cap counts decoded chunks and stops a bomb after one of them.
 * Decoded chunks are bounded (about 64 KiB, or the input chunk's size), never the whole body.
 */

/** HTTP content-coding → the decoder's format (HTTP's "deflate" is the zlib format). */
const FORMATS: Record<string, Bun.CompressionFormat> = { gzip: 'gzip', 'x-gzip': 'gzip', deflate: 'deflate', br: 'brotli', zstd: 'zstd' }

/**
 * The decoders to apply, in order, for a `Content-Encoding` value; [] for none or identity;
 * null when a coding is one we cannot decode (the caller refuses the answer).
 */
export function decodersFor(contentEncoding: string | null): Bun.CompressionFormat[] | null {
  if (!contentEncoding) return []
  const codings = contentEncoding
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c && c !== 'identity')
  // Listed in the order they were applied: undo the last one first.
  const formats = codings.reverse().map((c) => FORMATS[c])
  return formats.every((f) => f !== undefined) ? (formats as Bun.CompressionFormat[]) : null
}

/** The body with every coding undone; a corrupt body errors the stream when it is read. */
export function decodeBody(body: ReadableStream<Uint8Array>, decoders: Bun.CompressionFormat[]): ReadableStream<Uint8Array> {
  return decoders.reduce((s, f) => s.pipeThrough(new DecompressionStream(f) as unknown as TransformStream<Uint8Array, Uint8Array>), body)
}
