/**
 * ack-outbox.lua (the flusher's ack): acked entries leave the stream; an entry some consumer still
 * holds, or one never delivered, never does — under random interleavings of two consumers reading
 * and acking in any order (fast-check).
 */
import { afterAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import Redis from 'ioredis'
import { runAckOutbox } from '../../src/lua/ack-outbox'
import { loadScripts } from '../../src/redis/scripts'
import { REDIS_URL } from '../helpers/harness'

const redis = new Redis(REDIS_URL)
const scripts = loadScripts(redis as never)
const ctx = { scripts }
const GROUP = 'flusher'
let n = 0
const fresh = () => `test-ack:{ack-${process.pid}-${Date.now()}-${n++}}:outbox`
const made: string[] = []
afterAll(async () => {
  if (made.length) await redis.del(...made)
  redis.disconnect()
})

async function streamWith(entries: number): Promise<{ key: string; ids: string[] }> {
  const key = fresh()
  made.push(key)
  await redis.xgroup('CREATE', key, GROUP, '0', 'MKSTREAM')
  const ids: string[] = []
  for (let i = 0; i < entries; i++) ids.push((await redis.xadd(key, '*', 'kind', 'call', 'i', String(i)))!)
  return { key, ids }
}

const read = async (key: string, consumer: string, count: number): Promise<string[]> => {
  const res = (await redis.xreadgroup('GROUP', GROUP, consumer, 'COUNT', count, 'STREAMS', key, '>')) as [string, [string, string[]][]][] | null
  return (res?.[0]?.[1] ?? []).map(([id]) => id)
}
const inStream = async (key: string) => (await redis.xrange(key, '-', '+')).map(([id]) => id)

describe('ack-outbox.lua', () => {
  test('a fully acked batch leaves only the entries not yet delivered', async () => {
    const { key, ids } = await streamWith(10)
    const got = await read(key, 'a', 6)
    expect(await runAckOutbox(ctx, { stream: key, group: GROUP, ids: got })).toEqual({ acked: 6, trimmed: 6 })
    expect(await inStream(key)).toEqual(ids.slice(6))
    expect(await runAckOutbox(ctx, { stream: key, group: GROUP, ids: await read(key, 'a', 10) })).toEqual({ acked: 4, trimmed: 4 })
    expect(await redis.xlen(key)).toBe(0)
  })

  test("another consumer's older pending entry holds the trim; its ack releases the rest", async () => {
    const { key, ids } = await streamWith(6)
    const b = await read(key, 'b', 2)
    const a = await read(key, 'a', 4)
    expect(await runAckOutbox(ctx, { stream: key, group: GROUP, ids: a })).toEqual({ acked: 4, trimmed: 0 })
    expect(await inStream(key)).toEqual(ids)
    await runAckOutbox(ctx, { stream: key, group: GROUP, ids: b })
    expect(await redis.xlen(key)).toBe(0)
  })

  test('acks more ids than one Lua unpack takes', async () => {
    const { key } = await streamWith(2500)
    const got = await read(key, 'a', 2500)
    expect(await runAckOutbox(ctx, { stream: key, group: GROUP, ids: got })).toEqual({ acked: 2500, trimmed: 2500 })
  })

  test('property: no entry that is pending or undelivered is ever trimmed; acked ones all go once nothing older is held', async () => {
    const step = fc.oneof(
      fc.record({ op: fc.constant('read' as const), who: fc.constantFrom('a', 'b'), count: fc.integer({ min: 1, max: 4 }) }),
      fc.record({ op: fc.constant('ack' as const), who: fc.constantFrom('a', 'b'), pick: fc.integer({ min: 1, max: 4 }) }),
      fc.record({ op: fc.constant('add' as const), count: fc.integer({ min: 1, max: 3 }) }),
    )
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
        const { key, ids: all } = await streamWith(3)
        const delivered = new Set<string>()
        const held: Record<string, string[]> = { a: [], b: [] }
        for (const s of steps) {
          if (s.op === 'add') for (let i = 0; i < s.count; i++) all.push((await redis.xadd(key, '*', 'kind', 'call'))!)
          else if (s.op === 'read') {
            const got = await read(key, s.who, s.count)
            got.forEach((id) => delivered.add(id))
            held[s.who]!.push(...got)
          } else {
            // A consumer acks some of what it holds, not necessarily the oldest first.
            const mine = held[s.who]!
            const ids = mine.filter((_, i) => i % 2 === 0).slice(0, s.pick)
            if (ids.length === 0) continue
            held[s.who] = mine.filter((id) => !ids.includes(id))
            await runAckOutbox(ctx, { stream: key, group: GROUP, ids })
          }
          const present = new Set(await inStream(key))
          for (const id of [...held.a!, ...held.b!]) expect(present.has(id)).toBe(true)
          for (const id of all) if (!delivered.has(id)) expect(present.has(id)).toBe(true)
        }
        // Everything acked at the end: only the undelivered remain.
        for (const who of ['a', 'b']) if (held[who]!.length) await runAckOutbox(ctx, { stream: key, group: GROUP, ids: held[who]! })
        expect(await inStream(key)).toEqual(all.filter((id) => !delivered.has(id)))
      }),
      { numRuns: 40 },
    )
  }, 60_000)
})
