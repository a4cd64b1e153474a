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

test('`sent` is called once the batch is handed to the sender, before its answer', async () => {
  const log: string[] = []
  let answer!: (r: string[]) => void
  const batch = new TurnBatch<number, string>((_, items) => {
    log.push(`send ${items.join(',')}`)
    return new Promise((r) => (answer = r))
  })
  const a = batch.add('g', 1, () => log.push('sent 1'))
  const b = batch.add('g', 2, () => log.push('sent 2'))
  const answered = Promise.all([a, b]).then(() => log.push('answered'))
  await new Promise((r) => setImmediate(r))
  expect(log).toEqual(['send 1,2', 'sent 1', 'sent 2'])
  answer(['x', 'y'])
  await answered
  expect(log.at(-1)).toBe('answered')
})
