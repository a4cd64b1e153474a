/**
 * TurnBatch (src/redis/turn-batch.ts), over random groups and sizes: every item gets its own
 * answer, batches hold one group each and never more than the cap, everything added in one turn
 * goes out in ⌈n / cap⌉ batches per group, and a failed batch rejects exactly its own items.
 *
 *   bun test test/integration/turn-batch.property.test.ts
 */
import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { TurnBatch } from '../../src/redis/turn-batch'

test('each item is answered by its own batch, one group per batch, within the cap', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 120 }), fc.integer({ min: 1, max: 40 }), fc.integer({ min: 0, max: 3 }), async (groups, max, failing) => {
      const sent: { group: string; items: number[] }[] = []
      const batch = new TurnBatch<number, string>(async (group, items) => {
        sent.push({ group, items })
        if (group === `g${failing}`) throw new Error(`down ${group}`)
        return items.map((i) => `answer ${i}`)
      }, max)
      const results = await Promise.allSettled(groups.map((g, i) => batch.add(`g${g}`, i)))
      results.forEach((r, i) => {
        if (groups[i] === failing) expect(r).toEqual({ status: 'rejected', reason: new Error(`down g${failing}`) })
        else expect(r).toEqual({ status: 'fulfilled', value: `answer ${i}` })
      })
      for (const b of sent) {
        expect(b.items.length).toBeLessThanOrEqual(max)
        expect(b.items.every((i) => `g${groups[i]}` === b.group)).toBe(true)
      }
      // Everything was added in one turn: per group, the fewest batches the cap allows.
      for (const g of new Set(groups)) {
        const n = groups.filter((x) => x === g).length
        expect(sent.filter((b) => b.group === `g${g}`)).toHaveLength(Math.ceil(n / max))
      }
      expect(sent.flatMap((b) => b.items).sort((a, b) => a - b)).toEqual(groups.map((_, i) => i))
    }),
    { numRuns: 200 },
  )
})

test('a sender answering the wrong number of results rejects its batch', async () => {
  const batch = new TurnBatch<number, number>(async (_, items) => items.slice(1))
  const rs = await Promise.allSettled([batch.add('a', 1), batch.add('a', 2)])
  expect(rs.map((r) => r.status)).toEqual(['rejected', 'rejected'])
})

/**
 * What DebitedCall.settleQueued counts on: an item added while one request is handled is sent
 * before the next request's handler runs, with no waiting for its answer. The client sends each
 * request once the previous answer has arrived, as an SDK's next call does. Fails if the batch
 * went later than the event loop's next poll (a 1 ms timer instead of the setImmediate).
 */
test('an item added while a request is handled is sent before the next request is read', async () => {
  const sent: number[] = []
  const batch = new TurnBatch<number, number>(async (_, items) => {
    sent.push(...items)
    return new Promise(() => {}) // never answered: only the order of sending is at stake
  })
  let n = 0
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch() {
      const seen = sent.length
      void batch.add('g', n++)
      return new Response(String(seen))
    },
  })
  try {
    for (let i = 0; i < 200; i++) {
      const r = await fetch(`http://127.0.0.1:${server.port}/`)
      expect(Number(await r.text())).toBe(i)
    }
  } finally {
    server.stop(true)
  }
})
