/**
 * A parent's `carved` is what its live children may still spend of their budgets (lua/lib/budget.lua):
 * a revoked child holds nothing, and neither does an expired one. Expiry has no writer, so an
 * expired child's carve goes back lazily, once (release-expired.lua, run before create-agent.lua weighs
 * a carve; recount-agents.lua for agents the set does not hold), and is marked `carve_freed`, which a
 * later revoke, budget change or refund must honour. This drives the scripts directly through
 * random mixes of creates, expiries, kills, revokes, budget changes, spends and refunds, and
 * recomputes every live parent's carve from its children's hashes after each step.
 * The HTTP test (test/http/boundaries.audit.test.ts, "agent expiry") covers the operator's view.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { hashToken } from '../../src/auth/tokens'
import { newAccountId } from '../../src/ledger/accounts'
import { windowsAt } from '../../src/windows'
import { runAgentState, runCreateAgent, runRecountAgents, runReleaseExpired, runSetPolicies } from '../../src/lua/agents'
import { runDebit } from '../../src/lua/debit'
import { runRefund } from '../../src/lua/refund'
import { scriptRig } from '../helpers/script-rig'

const { redis, keys, ctx } = scriptRig('carve')

const T0 = 1_800_000_000_000
let seq = 0

interface Agent {
  id: string
  /** Its ancestors, parent first. */
  chain: string[]
}

async function create(acct: string, now: number, parent: Agent | null, budget: number, ttlMs: number | null) {
  const id = `agt_carve${String(++seq).padStart(17, '0')}`
  const chain = parent ? [parent.id, ...parent.chain] : []
  const reply = await runCreateAgent(ctx, {
    now, accountId: acct, agentId: id, tokenHash: hashToken(id), name: id, maxAgents: 1000,
    dailyCap: null, allow: null, perCallMax: null, chain, budget, ttlMs, maxDepth: 4, via: 'api',
  })
  return { agent: { id, chain }, reply }
}

async function spend(acct: string, now: number, a: Agent, price: number) {
  const w = windowsAt(now)
  const callId = `call_carve_${++seq}`
  const r = await runDebit(ctx, {
    now, accountId: acct, agentId: a.id, chain: a.chain, tokenHash: hashToken(a.id), target: 'test.search', price, unpriced: false,
    callId, day: w.day, rateWindow: w.rate, prevRateWindow: w.prevRate, rateLimit: 1_000_000,
    defaultDailyCap: 1_000_000_000, unpricedRequestCap: 1_000, fingerprint: `fp${seq}`, dayKeyTtlS: 172_800,
    breakerCreditsPerMinute: 0, breakerIdenticalPerMinute: 0, lowBalanceAlert: 0, abandonAt: now + 3_600_000,
  })
  return r.status === 'ok' ? { callId, agent: a, day: w.day, at: now } : null
}

/** Every live parent's `carved` against what its children's hashes say it must be at `now`. */
async function expectCarvesExact(acct: string, agents: Agent[], now: number) {
  const rows = new Map<string, Record<string, string>>()
  for (const a of agents) rows.set(a.id, await redis.hgetall(keys.agent(acct, a.id)))
  const revokedLine = (a: Agent) => [a.id, ...a.chain].some((id) => rows.get(id)?.state === 'revoked')
  for (const p of agents) {
    if (revokedLine(p)) continue // a revoked subtree creates nothing again: its carve is never weighed
    let expected = 0
    for (const c of agents) {
      if (c.chain[0] !== p.id) continue
      const r = rows.get(c.id)!
      const expired = r.expires !== undefined && Number(r.expires) <= now
      if (r.state === 'revoked' || expired || r.budget === undefined) continue
      expected += Math.max(0, Number(r.budget) - Number(r.spent_total ?? 0))
    }
    expect({ agent: p.id, carved: Number(rows.get(p.id)!.carved ?? 0) }).toEqual({ agent: p.id, carved: expected })
  }
}

describe('an expired child gives its carve back once', () => {
  test('property: after any mix of creates, expiries, kills, revokes, budget changes, spends and refunds, each live parent carves exactly its live children', async () => {
    // Weighted towards what crosses an expiry: short lives, waits, spends before it and refunds
    // and budget changes after it.
    const op = fc.oneof(
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('create' as const), parent: fc.nat(40), budget: fc.integer({ min: 0, max: 60 }), ttl: fc.option(fc.integer({ min: 1, max: 4_000 }), { freq: 4 }) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('kill' as const, 'revive' as const, 'revoke' as const), target: fc.nat(40) }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('budget' as const), target: fc.nat(40), budget: fc.option(fc.integer({ min: 0, max: 80 })) }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('spend' as const), target: fc.nat(40), price: fc.integer({ min: 1, max: 30 }) }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('refund' as const), call: fc.nat(40) }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 1, max: 3_000 }) }) },
    )
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), async (ops) => {
        const acct = newAccountId(null)
        await redis.hset(keys.account(acct), { owner: hashToken(`owner-${acct}`), balance: 1_000_000 })
        const agents: Agent[] = []
        const calls: NonNullable<Awaited<ReturnType<typeof spend>>>[] = []
        let now = T0
        const root = await create(acct, now, null, 200, null)
        agents.push(root.agent)
        for (const o of ops) {
          const pick = (n: number) => agents[n % agents.length]!
          if (o.kind === 'wait') now += o.ms
          else if (o.kind === 'create') {
            const parent = pick(o.parent)
            if (parent.chain.length >= 3) continue
            const a = await create(acct, now, parent, o.budget, o.ttl)
            if (a.reply.status === 'ok') agents.push(a.agent)
          } else if (o.kind === 'budget') {
            const a = pick(o.target)
            if (a.chain.length === 0) continue
            await runSetPolicies(ctx, acct, now, [{ agentId: a.id, parentId: a.chain[0]!, fields: { budget: o.budget } }])
          } else if (o.kind === 'spend') {
            const c = await spend(acct, now, pick(o.target), o.price)
            if (c) calls.push(c)
          } else if (o.kind === 'refund') {
            const c = calls.splice(o.call % Math.max(1, calls.length), 1)[0]
            if (!c) continue
            const r = await runRefund(ctx, { now, accountId: acct, agentId: c.agent.id, callId: c.callId, day: c.day, reason: 'provider_error', chain: c.agent.chain, at: c.at })
            expect(r.status).toBe('ok')
          } else {
            const a = pick(o.target)
            await runAgentState(ctx, { now, accountId: acct, agentId: a.id, action: o.kind, via: 'api', parentId: a.chain[0] ?? null, actorId: null })
          }
          // What a create would do first; then every live parent's carve is exact.
          await runReleaseExpired(ctx, acct, now)
          await expectCarvesExact(acct, agents, now)
          // The recount (agents older than the set, ledger:rebuild) derives the same.
          await runRecountAgents(ctx, acct, { now, replace: true })
          await expectCarvesExact(acct, agents, now)
        }
      }),
      { numRuns: 150 },
    )
  })

  test('a release listed twice (two instances at once) gives the carve back once; a lineage not yet expired is skipped', async () => {
    const acct = newAccountId(null)
    const root = (await create(acct, T0, null, 100, null)).agent
    const short = (await create(acct, T0, root, 30, 1_000)).agent
    const long = (await create(acct, T0, root, 20, 60_000)).agent
    expect(Number(await redis.hget(keys.agent(acct, root.id), 'carved'))).toBe(50)
    const members = [`${short.id},${root.id}`, `${long.id},${root.id}`]
    const hashes = [keys.agent(acct, short.id), keys.agent(acct, root.id), keys.agent(acct, long.id), keys.agent(acct, root.id)]
    const run = () => ctx.scripts.releaseExpired([keys.liveAgents(acct), ...hashes], [T0 + 1_000, ...members])
    const [first, second] = await Promise.all([run(), run()])
    expect([first, second].map((r) => r[1]).sort()).toEqual([0, 1])
    expect(Number(await redis.hget(keys.agent(acct, root.id), 'carved'))).toBe(20)
    expect(await redis.hget(keys.agent(acct, short.id), 'carve_freed')).toBe('1')
    expect(await redis.hget(keys.agent(acct, long.id), 'carve_freed')).toBeNull()
    // Revoking the released child afterwards gives nothing a second time.
    await runAgentState(ctx, { now: T0 + 1_000, accountId: acct, agentId: short.id, action: 'revoke', via: 'api', parentId: root.id, actorId: null })
    expect(Number(await redis.hget(keys.agent(acct, root.id), 'carved'))).toBe(20)
  })

  test('a lineage whose chain is not the agent\'s parent is refused, nothing written', async () => {
    const acct = newAccountId(null)
    const root = (await create(acct, T0, null, 100, null)).agent
    const other = (await create(acct, T0, null, 100, null)).agent
    const child = (await create(acct, T0, root, 30, 1_000)).agent
    const forged = `${child.id},${other.id}`
    await redis.zadd(keys.liveAgents(acct), T0 + 1_000, forged)
    const reply = ctx.scripts.releaseExpired([keys.liveAgents(acct), keys.agent(acct, child.id), keys.agent(acct, other.id)], [T0 + 1_000, forged])
    await expect(reply).rejects.toThrow(/is not the tree/)
    expect(Number(await redis.hget(keys.agent(acct, root.id), 'carved'))).toBe(30)
    expect(await redis.hget(keys.agent(acct, other.id), 'carved')).toBeNull()
  })
})
