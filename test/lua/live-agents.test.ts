/**
 * The agent limit counts live agents (lua/lib/live-agents.lua): create-agent.lua adds the new agent
 * and refuses past the limit, agent-state.lua frees a revoked agent's whole subtree in the script
 * that revokes, an expired agent stops counting, a killed one still counts, and recount-agents.lua
 * (agents older than the set, ledger:rebuild) derives the same set from the agent hashes. The
 * HTTP tests (subagents.security) cover the operator's view; this pins the rule with a small limit.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { hashToken } from '../../src/auth/tokens'
import { newAccountId } from '../../src/ledger/accounts'
import { runAgentState, runCreateAgent, runRecountAgents, type AgentAction } from '../../src/lua/agents'
import { scriptRig } from '../helpers/script-rig'

const { redis, keys, ctx } = scriptRig('live')

const T0 = 1_800_000_000_000
let seq = 0

/** Creates an agent (a sub-agent of `parent`, chain included, when given) under a limit of `max`. */
async function create(acct: string, o: { max: number; now?: number; parent?: { id: string; chain: string[] }; ttlMs?: number }) {
  const id = `agt_live${String(++seq).padStart(18, '0')}`
  const reply = await runCreateAgent(ctx, {
    now: o.now ?? T0, accountId: acct, agentId: id, tokenHash: hashToken(id), name: id, maxAgents: o.max,
    dailyCap: null, allow: null, perCallMax: null, chain: o.parent ? [o.parent.id, ...o.parent.chain] : [],
    budget: o.parent ? 0 : null, ttlMs: o.ttlMs ?? null, maxDepth: 4, via: 'api',
  })
  return { id, chain: o.parent ? [o.parent.id, ...o.parent.chain] : [], reply }
}

async function move(acct: string, id: string, action: AgentAction, now = T0) {
  const parentId = await redis.hget(keys.agent(acct, id), 'parent')
  return runAgentState(ctx, { now, accountId: acct, agentId: id, action, via: 'api', parentId, actorId: null })
}

/** The lineages the limit counts at `now` (the `_` marker left out). */
const counted = async (acct: string, now = T0) => (await redis.zrangebyscore(keys.liveAgents(acct), `(${now}`, '+inf')).filter((m) => m !== '_').sort()

describe('the agent limit counts live agents', () => {
  test('a revoke frees the agent and its whole subtree, once; a kill keeps its place; an expired agent stops counting', async () => {
    const acct = newAccountId(null)
    const root = await create(acct, { max: 4 })
    const mid = await create(acct, { max: 4, parent: root })
    const leaf = await create(acct, { max: 4, parent: mid })
    const other = await create(acct, { max: 4 })
    expect([root, mid, leaf, other].map((a) => a.reply.status)).toEqual(['ok', 'ok', 'ok', 'ok'])
    expect((await create(acct, { max: 4 })).reply).toEqual({ status: 'limit_reached', max: 4 })
    // Killed: the operator may revive it, so it keeps its place.
    await move(acct, other.id, 'kill')
    expect((await create(acct, { max: 4 })).reply.status).toBe('limit_reached')
    // Revoking mid frees mid and leaf; revoking leaf afterwards frees nothing more.
    expect((await move(acct, mid.id, 'revoke')).status).toBe('ok')
    const freed = [await create(acct, { max: 4 }), await create(acct, { max: 4 })]
    expect(freed.map((a) => a.reply.status)).toEqual(['ok', 'ok'])
    expect((await move(acct, leaf.id, 'revoke')).status).toBe('ok')
    expect((await create(acct, { max: 4 })).reply.status).toBe('limit_reached')
    await move(acct, freed[0]!.id, 'revoke')
    const temp = await create(acct, { max: 4, ttlMs: 60_000 })
    expect(temp.reply.status).toBe('ok')
    expect((await create(acct, { max: 4 })).reply.status).toBe('limit_reached')
    // Past its expiry the temporary agent no longer counts (as the debit answers it AGENT_REVOKED).
    expect((await create(acct, { max: 4, now: T0 + 60_000 })).reply.status).toBe('ok')
    expect(await redis.zscore(keys.liveAgents(acct), temp.id)).toBeNull()
  })

  test('agents older than the live-agent set are counted once from their hashes, then the create runs', async () => {
    const acct = newAccountId(null)
    const root = await create(acct, { max: 10 })
    const child = await create(acct, { max: 10, parent: root })
    const gone = await create(acct, { max: 10 })
    await move(acct, gone.id, 'revoke')
    await redis.del(keys.liveAgents(acct))
    expect((await create(acct, { max: 10 })).reply).toEqual({ status: 'recount' })
    expect(await runRecountAgents(ctx, acct, { now: T0, replace: false })).toBe(2)
    expect((await create(acct, { max: 3 })).reply.status).toBe('ok')
    expect((await create(acct, { max: 3 })).reply.status).toBe('limit_reached')
    expect(await counted(acct)).toContain(`${child.id},${root.id}`)
  })

  test('property: after any mix of creates, kills, revokes and expiries, the kept set is the one recounted from the hashes', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('create' as const), parent: fc.nat(30), ttl: fc.option(fc.integer({ min: 1, max: 5_000 })) }),
      fc.record({ kind: fc.constantFrom('kill' as const, 'revive' as const, 'revoke' as const), target: fc.nat(30) }),
      fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 1, max: 3_000 }) }),
    )
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
        const acct = newAccountId(null)
        const agents: { id: string; chain: string[] }[] = []
        let now = T0
        for (const o of ops) {
          if (o.kind === 'wait') now += o.ms
          else if (o.kind === 'create') {
            // Half the creates are the operator's; the others under an agent, when it may create.
            const parent = o.parent % 2 === 0 || agents.length === 0 ? undefined : agents[o.parent % agents.length]
            const a = await create(acct, { max: 12, now, parent: parent && parent.chain.length < 3 ? parent : undefined, ttlMs: o.ttl ?? undefined })
            if (a.reply.status === 'ok') agents.push(a)
          } else if (agents.length > 0) await move(acct, agents[o.target % agents.length]!.id, o.kind, now)
          const kept = await counted(acct, now)
          expect(await runRecountAgents(ctx, acct, { now, replace: true })).toBe(kept.length)
          expect(await counted(acct, now)).toEqual(kept)
        }
      }),
      { numRuns: 40 },
    )
  })
})
