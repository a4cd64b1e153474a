/**
 * 200 concurrent metered streams with large output ceilings on a balance (500) and a daily cap
 * (300) that cover a few of them at a time (docs/api.md §7): sampled in Redis while the load runs, the
 * balance never goes below 0 and the day's spend never passes the cap; afterwards every call is
 * settled or refunded exactly once (none left in flight), Σ charged = what the balance lost = Σ of the
 * account's ledger entries in Redis and, after the flush, in Postgres.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { windowsAt } from '../../src/windows'
import { readAccount } from '../../src/redis/account-hash'
import { createLlmFake, type LlmFake } from '../fakes/llm'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, flushAll, pgLedger, redisBalance } from '../helpers/ledger'
import { BIG, costMicro, meteredCatalog } from '../helpers/metering'
import { OPENAI_HOUSE_KEY } from '../helpers/proxy'

let t: TestApp
let base: string
let llm: LlmFake

beforeAll(async () => {
  t = await startTestApp({ catalog: meteredCatalog, env: { OPENAI_TEST_KEY: OPENAI_HOUSE_KEY } })
  llm = createLlmFake()
  t.fake.handler = llm.handler
  base = await t.listen()
})
afterAll(async () => {
  await t.close()
})

test('200 concurrent streams: no cap crossed at any moment, every reservation released or charged once', async () => {
  const a = await t.signup()
  const CAP = 300
  expect((await t.req('PUT', '/v1/policies', { token: a.token, body: { account: { daily_cap: CAP } } })).status).toBe(200)
  llm.usage = { input: 30, cached: 0, output: 120 }
  llm.chunks = 8
  llm.frameDelayMs = 3
  const { ctx } = t.s
  const day = windowsAt(t.clock.now()).day
  let running = true
  let samples = 0
  const violations: string[] = []
  const sampler = (async () => {
    while (running) {
      const [{ balance, held }, spent] = await Promise.all([readAccount(ctx, a.account_id, 'balance', 'held'), ctx.redis.get(ctx.keys.spentToday(a.account_id, day))])
      samples++
      if ((balance ?? 0) < 0) violations.push(`balance ${balance}`)
      if (Number(held ?? 0) < 0) violations.push(`held ${held}`)
      if (Number(spent ?? 0) > CAP) violations.push(`spent ${spent} > ${CAP}`)
      await Bun.sleep(1)
    }
  })()
  const results = await Promise.all(
    Array.from({ length: 200 }, async (_, i) => {
      // A burst of 50 at once, then the rest spread over ~0.6 s: streams overlap while earlier ones
      // settle and release their reservations, so later ones are admitted as well as refused.
      if (i >= 50) await Bun.sleep((i - 50) * 4)
      const r = await fetch(`${base}/proxy/openai/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-big', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      })
      await r.text()
      return { status: r.status, id: r.headers.get('x-pab-call-id') }
    }),
  )
  llm.frameDelayMs = 0
  llm.chunks = 5
  // Settles land just after the last byte.
  const served = results.filter((r) => r.status === 200)
  const perCall = Math.floor(costMicro(BIG, llm.usage) / 1e6)
  for (let i = 0; i < 100; i++) {
    const inflight = await ctx.redis.zrangebyscore(ctx.keys.inflight(ctx.keys.shardOf(a.account_id)), '-inf', '+inf')
    if (!inflight.some((m) => m.startsWith(a.account_id + '|'))) break
    await Bun.sleep(20)
  }
  running = false
  await sampler
  expect(violations).toEqual([])
  expect(samples).toBeGreaterThan(10)
  expect(served.length).toBeGreaterThan(5)
  expect(served.length).toBeLessThan(200)
  expect(results.every((r) => [200, 402, 429].includes(r.status))).toBe(true)

  // Settled and filed by settle.lua in one script: the record the bare word `filed`.
  const states = await Promise.all(served.map((r) => ctx.redis.get(ctx.keys.call(a.account_id, r.id!))))
  expect(states.every((s) => s === 'filed')).toBe(true)
  const entries = await checkRedisInvariant(t, a.account_id)
  // Each served call is one debit of its exact charge (its reservation was a hold, released).
  const charges = entries.filter((e) => e.kind === 'debit')
  expect(charges.length).toBe(served.length)
  expect(new Set(charges.map((e) => e.id))).toEqual(new Set(served.map((r) => `${r.id}:debit`)))
  expect(charges.every((e) => e.amount === -perCall)).toBe(true)
  expect(entries.filter((e) => e.kind === 'refund')).toEqual([])
  expect(await ctx.redis.hget(ctx.keys.account(a.account_id), 'held')).toBe('0')
  const balance = await redisBalance(t, a.account_id)
  expect(balance).toBe(500 - served.length * perCall)
  await flushAll(t)
  const pg = await pgLedger(t, a.account_id)
  expect(pg.count).toBe(entries.length)
  expect(pg.sum).toBe(balance)
}, 60_000)
