/**
 * Property: over random concurrent batches of proposals, approvals, declines and clock jumps,
 * after every batch
 *   - no agent holds more than 10 pending proposals;
 *   - a proposal left `pending` once never changes again, and was decided by exactly one 200
 *     (approve or decline) or by the expiry (no 200 at all);
 *   - each agent's daily cap is its initial one or the value of one of its approved proposals,
 *     and the initial one while none was approved.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

type Op = { kind: 'propose'; agent: number } | { kind: 'approve' | 'decline'; pick: number } | { kind: 'later'; hours: number }

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.nat(2).map((agent) => ({ kind: 'propose' as const, agent })) },
  { weight: 3, arbitrary: fc.nat().map((pick) => ({ kind: 'approve' as const, pick })) },
  { weight: 2, arbitrary: fc.nat().map((pick) => ({ kind: 'decline' as const, pick })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 30 }).map((hours) => ({ kind: 'later' as const, hours })) },
)

const INITIAL_CAP = 7

test('decided once, at most 10 pending per agent, caps only from approved proposals', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.array(op, { minLength: 1, maxLength: 15 }), { minLength: 1, maxLength: 6 }), async (batches) => {
      const o = await t.signup()
      const agents = await Promise.all([0, 1, 2].map(async (i) => (await t.req('POST', '/v1/agents', { token: o.token, body: { name: `a${i}`, daily_cap: INITIAL_CAP } })).body as { id: string; token: string }))
      const ids: string[] = []
      const valueOf = new Map<string, number>()
      const wins = new Map<string, number>()
      const final = new Map<string, string>()
      let next = 1000
      for (const batch of batches) {
        const later = batch.filter((x): x is Extract<Op, { kind: 'later' }> => x.kind === 'later').reduce((h, x) => h + x.hours, 0)
        if (later) t.clock.advance(later * 3600 * 1000)
        await Promise.all(
          batch.map(async (x) => {
            if (x.kind === 'propose') {
              const value = next++
              const r = await t.req('POST', '/v1/proposals', { token: agents[x.agent]!.token, body: { kind: 'raise_daily_cap', value, reason: 'prop' } })
              expect([201, 429]).toContain(r.status)
              if (r.status === 201) {
                ids.push(r.body.id)
                valueOf.set(r.body.id, value)
              }
            } else if (x.kind !== 'later' && ids.length > 0) {
              const id = ids[x.pick % ids.length]!
              const r = await t.req('POST', `/v1/proposals/${id}/${x.kind}`, { token: o.token })
              expect([200, 409]).toContain(r.status)
              if (r.status === 200) wins.set(id, (wins.get(id) ?? 0) + 1)
            }
          }),
        )
        const list = (await t.req('GET', '/v1/proposals', { token: o.token })).body.proposals as { id: string; status: string; agent_id: string; decided_via: string | null }[]
        for (const a of agents) expect(list.filter((p) => p.agent_id === a.id && p.status === 'pending').length).toBeLessThanOrEqual(10)
        for (const p of list) {
          if (final.has(p.id)) expect(p.status).toBe(final.get(p.id)!)
          if (p.status !== 'pending') final.set(p.id, p.status)
          expect(wins.get(p.id) ?? 0).toBe(p.status === 'approved' || p.status === 'declined' ? 1 : 0)
        }
        const pol = (await t.req('GET', '/v1/policies', { token: o.token })).body.agents
        for (const a of agents) {
          const approved = list.filter((p) => p.agent_id === a.id && p.status === 'approved').map((p) => valueOf.get(p.id))
          const cap = pol[a.id].daily_cap
          if (approved.length === 0) expect(cap).toBe(INITIAL_CAP)
          else expect(approved).toContain(cap)
        }
      }
    }),
    { numRuns: 15 },
  )
})
