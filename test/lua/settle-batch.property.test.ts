/**
 * settle.lua reads each account row of a batch once and writes it once after its last call, sums each
 * day spend's release into one DECRBY, and takes the in-flight members out and pushes each recent-calls
 * list once (issue 42's bench). That must change nothing but the cost: over random batches of metered
 * calls of two accounts — the owner, an agent and its sub-agent (a release along the chain moves the
 * agent's carve), the house lane and the owner's lane (a fee), cache
 * writes, filed and not filed, the same call twice, a day spend expired before the settle — one batch
 * and the same settles one script at a time give the same replies and leave the same Redis: account
 * rows, day spends (an expired one is not made again), agent rows, call records, in-flight set,
 * counters, the newest calls of each list and the outbox entries (as the one parser reads them: a
 * batch packs its filed calls into one stream entry). On a private redis-server.
 */
import { beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import Redis from 'ioredis'
import { hashToken } from '../../src/auth/tokens'
import { windowsAt } from '../../src/windows'
import { runDebit, type DebitArgs } from '../../src/lua/debit'
import { runSettle, type SettleArgs } from '../../src/lua/settle'
import { parseOutboxEntry } from '../../src/write-behind/outbox'
import { privateScriptServer } from '../helpers/script-rig'

const rig = privateScriptServer({ clock: { now: () => NOW } })
let redis: Redis
beforeAll(() => {
  redis = rig.redis
})
const ctxOf = rig.ctxOf
const NOW = Date.UTC(2026, 10, 25, 12, 0, 30)
// Three accounts of one shard (one hash slot: one script).
const ACCOUNTS = ['acc_07_settle_a', 'acc_07_settle_b', 'acc_07_settle_c']
const AGENT = 'agt_settle'
/** AGENT's sub-agent: its settles release along the chain (its own hash, then AGENT's, whose carve moves). */
const SUB = 'agt_settle_sub'
const KEEP = 2

interface CallSpec {
  acct: number
  agent: boolean
  /** An agent's call made by its sub-agent instead. */
  sub: boolean
  fee: number | null
  input: number
  cached: number
  output: number
  cacheWrite: number
  organic: boolean
  /** The usage estimated, not the provider's (a shape the script reads from its call's argument). */
  estimated: boolean
}
interface Case {
  /** Filed by the settle or not: one batch's calls share it (their options make the batch's group). */
  filed: boolean
  balances: number[]
  calls: CallSpec[]
  /** Positions of calls settled twice (a resent settle). */
  again: number[]
  /** Accounts whose day spend expired between the debits and the settles. */
  expired: boolean[]
}

const callSpec: fc.Arbitrary<CallSpec> = fc.record({
  acct: fc.integer({ min: 0, max: ACCOUNTS.length - 1 }),
  agent: fc.boolean(),
  sub: fc.boolean(),
  fee: fc.option(fc.integer({ min: 0, max: 100 }), { nil: null }),
  input: fc.constantFrom(0, 1, 999, 40_000),
  cached: fc.constantFrom(0, 0, 500),
  output: fc.constantFrom(0, 7, 3_000, 200_000),
  cacheWrite: fc.constantFrom(0, 0, 1_200),
  organic: fc.boolean(),
  estimated: fc.boolean(),
})
const caseArb: fc.Arbitrary<Case> = fc.record({
  filed: fc.boolean(),
  balances: fc.array(fc.integer({ min: 0, max: 4_000 }), { minLength: ACCOUNTS.length, maxLength: ACCOUNTS.length }),
  calls: fc.array(callSpec, { minLength: 1, maxLength: 24 }),
  again: fc.array(fc.nat(), { maxLength: 3 }),
  expired: fc.array(fc.boolean(), { minLength: ACCOUNTS.length, maxLength: ACCOUNTS.length }),
})

const w = windowsAt(NOW)
let run = 0
/** The replies and the Redis a case leaves behind, settled as batches or one settle a script. */
async function settle(c: Case, batched: boolean) {
  const ctx = ctxOf(`stb${++run}${batched ? 'b' : 's'}`)
  const { keys } = ctx
  const shard = keys.shardOf(ACCOUNTS[0]!)
  for (const [i, acct] of ACCOUNTS.entries()) {
    await redis.hset(keys.account(acct), { owner: hashToken(`owner${i}`), balance: c.balances[i]! })
    await redis.hset(keys.agent(acct, AGENT), { token: hashToken(`${AGENT}${i}`), name: AGENT, created: 1, v: 1, state: 'active', spent_total: 0, depth: 1, budget: 1e9, carved: 5e8 })
    await redis.hset(keys.agent(acct, SUB), { token: hashToken(`${SUB}${i}`), name: SUB, created: 1, v: 1, state: 'active', spent_total: 0, depth: 2, budget: 5e8, parent: AGENT, chain: AGENT })
  }
  const debited: SettleArgs[] = []
  for (const [i, s] of c.calls.entries()) {
    const accountId = ACCOUNTS[s.acct]!
    const agentId = s.agent ? (s.sub ? SUB : AGENT) : null
    const chain = s.agent && s.sub ? [AGENT] : []
    const callId = `call_${i}`
    const args: DebitArgs = {
      now: NOW, accountId, agentId, chain, tokenHash: hashToken(s.agent ? `${agentId}${s.acct}` : `owner${s.acct}`), target: 'proxy:llm/m1', price: 5, unpriced: false,
      callId, day: w.day, rateWindow: w.rate, prevRateWindow: w.prevRate, rateLimit: 1e9, defaultDailyCap: 1e12, unpricedRequestCap: 1e9, fingerprint: 'fp',
      dayKeyTtlS: 172_800, breakerCreditsPerMinute: 0, breakerIdenticalPerMinute: 1e9, lowBalanceAlert: 0, abandonAt: NOW + 60_000,
      metered: { model: 'm1', inputBound: 2_000, input: 1000, cachedInput: 100, output: 4000, cacheWrite: 1250, ceiling: 256, maxOutput: 4096, minOutput: 16, ...(s.fee === null ? {} : { feePct: s.fee }) },
    }
    const r = await runDebit(ctx, args)
    if (r.status !== 'ok') continue
    debited.push({
      now: NOW + 1_000, accountId, agentId, callId, day: w.day, chain, at: NOW, source: s.estimated ? 'estimated' : 'provider',
      tokens: { input: s.input, cached: s.cached, output: s.output, ...(s.cacheWrite ? { cache_write: s.cacheWrite } : {}) },
      ...(c.filed ? { file: { recordHead: JSON.stringify({ call_id: callId, account_id: accountId }).slice(0, -1), organic: s.organic, recentCalls: KEEP, settledTtlS: 3600 } } : {}),
    })
  }
  for (const [i, acct] of ACCOUNTS.entries()) if (c.expired[i]) await redis.del(keys.spentToday(acct, w.day))
  const order = [...debited]
  if (debited.length) for (const p of c.again) order.splice(p % (order.length + 1), 0, debited[p % debited.length]!)
  const replies = []
  if (batched) replies.push(...(await Promise.all(order.map((a) => runSettle(ctx, a)))))
  else for (const a of order) replies.push(await runSettle(ctx, a))

  const recordOf = async (key: string) => ((await redis.type(key)) === 'string' ? redis.get(key) : redis.hgetall(key))
  const ttlOf = async (key: string) => {
    const t = await redis.ttl(key)
    return t > 0 ? 'expires' : t
  }
  return {
    debited: debited.length,
    replies,
    subSettled: replies.filter((r, i) => r.status === 'ok' && order[i]!.agentId === SUB).length,
    accounts: await Promise.all(ACCOUNTS.map((a) => redis.hgetall(keys.account(a)))),
    days: await Promise.all(ACCOUNTS.map(async (a) => [await redis.get(keys.spentToday(a, w.day)), await ttlOf(keys.spentToday(a, w.day))])),
    agents: await Promise.all(ACCOUNTS.flatMap((a) => [AGENT, SUB].map((g) => redis.hgetall(keys.agent(a, g))))),
    // A filed call's record is the bare word `filed`; a settled one its string (a hash for a keyed call).
    calls: await Promise.all(debited.map(async (a) => [await recordOf(keys.call(a.accountId, a.callId)), await ttlOf(keys.call(a.accountId, a.callId))])),
    lists: await Promise.all(ACCOUNTS.map((a) => redis.lrange(keys.recentCalls(a), 0, KEEP - 1))),
    inflight: await redis.zrange(keys.inflight(shard), 0, -1),
    stats: await redis.hgetall(keys.stats(shard)),
    // As every reader sees them (the one parser): a batch packs its filed calls into one stream entry.
    outbox: (await redis.xrange(keys.outbox(shard), '-', '+')).flatMap(([, f]) => parseOutboxEntry('', f).map((e) => e.fields)),
  }
}

test('one batch and one settle a script: the same replies, account rows, day spends, agents, records, lists and outbox', async () => {
  let settledSome = 0
  let subSettled = 0
  await fc.assert(
    fc.asyncProperty(caseArb, async (c) => {
      const batched = await settle(c, true)
      const single = await settle(c, false)
      expect(batched).toEqual(single)
      if (batched.replies.some((r) => r.status === 'ok')) settledSome++
      subSettled += batched.subSettled
      // Every settled call left the in-flight set; an expired day spend was not made again.
      expect(batched.inflight).toEqual([])
      for (const [i, expired] of c.expired.entries()) if (expired) expect(batched.days[i]).toEqual([null, -2])
    }),
    { numRuns: 50 },
  )
  // The property ran on settles, not only on refusals.
  expect(settledSome).toBeGreaterThan(25)
  // And on sub-agents' releases along their chain.
  expect(subSettled).toBeGreaterThan(25)
}, 180_000)
