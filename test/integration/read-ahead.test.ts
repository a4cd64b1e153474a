/**
 * afterFirst (src/paid-request/read-ahead.ts) on real streams: a body whose end the runtime already holds
 * is whole; one still arriving is not, and its next read is the one already under way (nothing is
 * lost or read twice); a failure after the first read is left to the relay's first read.
 */
import { expect, test } from 'bun:test'
import { afterFirst } from '../../src/paid-request/read-ahead'
import type { ChunkReader } from '../../src/paid-request/relay'

const enc = new TextEncoder()
const dec = new TextDecoder()

/** The relay's view of a stream's reader (the DOM and Bun typings of a read result differ). */
const readerOf = (stream: ReadableStream<Uint8Array>) => stream.getReader() as unknown as ChunkReader

/** A stream of `parts`, each enqueued once `release(i)` is called (the first at once), then closed. */
function gatedStream(parts: string[]) {
  const gates = parts.map(() => Promise.withResolvers<void>())
  gates[0]!.resolve()
  let i = 0
  const stream = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (i === parts.length) return c.close()
      await gates[i]!.promise
      c.enqueue(enc.encode(parts[i++]!))
    },
  })
  return { reader: readerOf(stream), release: (n: number) => gates[n]!.resolve() }
}

test('a body that ended with its first read is whole', async () => {
  const { reader } = gatedStream(['data: whole\n\n'])
  const first = await reader.read()
  expect(dec.decode(first.value)).toBe('data: whole\n\n')
  expect(await afterFirst(reader, false)).toEqual({ whole: true })
})

test('a body still arriving is not whole; the relay reads on from where it was, every byte once', async () => {
  const { reader, release } = gatedStream(['data: 1\n\n', 'data: 2\n\n', 'data: 3\n\n'])
  await reader.read()
  const after = await afterFirst(reader, false)
  expect(after.whole).toBe(false)
  if (after.whole) return
  release(1)
  release(2)
  const rest: string[] = []
  for (let r = await after.reader.read(); !r.done; r = await after.reader.read()) rest.push(dec.decode(r.value))
  expect(rest).toEqual(['data: 2\n\n', 'data: 3\n\n'])
})

test('more bytes already there, but no end: not whole, and they come first', async () => {
  const { reader, release } = gatedStream(['a', 'b', 'c'])
  release(1)
  await reader.read()
  const after = await afterFirst(reader, false)
  expect(after.whole).toBe(false)
  if (after.whole) return
  expect(dec.decode((await after.reader.read()).value)).toBe('b')
  release(2)
  expect(dec.decode((await after.reader.read()).value)).toBe('c')
  expect((await after.reader.read()).done).toBe(true)
})

test('a body that fails after its first read is not whole; the failure reaches the relay', async () => {
  let n = 0
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (n++ === 0) return c.enqueue(enc.encode('data: 1\n\n'))
      c.error(new Error('upstream reset'))
    },
  })
  const reader = readerOf(stream)
  await reader.read()
  const after = await afterFirst(reader, false)
  expect(after.whole).toBe(false)
  if (after.whole) return
  await expect(after.reader.read()).rejects.toThrow('upstream reset')
})

test('a body of its declared length is whole, and read to its end', async () => {
  const { reader } = gatedStream(['{"ok":true}'])
  await reader.read()
  expect(await afterFirst(reader, true)).toEqual({ whole: true })
  expect((await reader.read()).done).toBe(true)
})
