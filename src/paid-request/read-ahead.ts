/**
 * What follows an upstream body's first read, known without waiting for more: whether the body had
 * already ended. Under load a short answer (a whole SSE stream included) arrives in one read with
 * its end right behind it; answered whole, it leaves in one write (headers, body and end) instead
 * of a stream's two or three, with no stream to run (docs/decisions.md, issue 17). An answer still
 * arriving is relayed as before, its next read already under way.
 */
import type { ChunkReader } from './relay'

type ReadResult = Awaited<ReturnType<ChunkReader['read']>>

export type AfterFirst = { whole: true } | { whole: false; reader: ChunkReader }

/**
 * `declaredWhole`: the first read holds the body's declared length, so nothing can follow; the
 * body is read to its end (its connection goes back to the pool) and whatever did follow is not
 * part of it. Otherwise the next read gets until the end of this turn of the event loop: a body
 * whose end the runtime already holds answers within it; one that is still arriving does not,
 * and waits no longer than that turn (no added latency worth a byte of an SSE stream).
 */
export async function afterFirst(reader: ChunkReader, declaredWhole: boolean): Promise<AfterFirst> {
  if (declaredWhole) {
    const end = await reader.read().catch(() => null)
    if (!end?.done) reader.cancel().catch(() => {})
    return { whole: true }
  }
  const read = reader.read()
  // A failed read is the relay's to report, as any failure mid-body: it gets the same promise.
  const outcome = read.then(
    (r): ReadResult | 'failed' => r,
    () => 'failed' as const,
  )
  let timer: ReturnType<typeof setImmediate> | undefined
  const turnOver = new Promise<'pending'>((r) => (timer = setImmediate(() => r('pending'))))
  const next = await Promise.race([outcome, turnOver])
  clearImmediate(timer)
  if (next !== 'pending' && next !== 'failed' && next.done) return { whole: true }
  return { whole: false, reader: withFirstRead(reader, read) }
}

/** The reader, its next read being `read` (already under way). */
function withFirstRead(reader: ChunkReader, read: Promise<ReadResult>): ChunkReader {
  let started: Promise<ReadResult> | null = read
  return {
    read() {
      const r = started ?? reader.read()
      started = null
      return r
    },
    cancel: (reason?: unknown) => reader.cancel(reason),
  }
}
