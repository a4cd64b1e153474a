/** Every denial the debit script makes from governance data, as the caller sees it. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { nextHktMidnight } from '../../src/clock'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { UNPRICED_DAILY_REQUEST_CAP: '3' } })
})
afterAll(async () => {
  await t.close()
})

async function setup(agentPolicy: Record<string, unknown> = {}, account: Record<string, unknown> | null = null) {
  const owner = await t.signup()
  const agent = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'a', ...agentPolicy } })).body as { id: string; token: string }
  if (account) expect((await t.req('PUT', '/v1/policies', { token: owner.token, body: { account } })).status).toBe(200)
  const call = (slug: string, token = agent.token) => t.req('POST', `/v1/call/${slug}`, { token, body: { q: 'x' } })
  const balance = async () => (await t.req('GET', '/v1/balance', { token: owner.token })).body.balance as number
  return { owner, agent, call, balance }
}

const resetsAt = () => new Date(nextHktMidnight(t.clock.now())).toISOString()

describe('governance denials', () => {
  test('agent allowlist → POLICY_DENIED rule agent_allowlist, raised by the operator via PUT /v1/policies; nothing debited', async () => {
    const { call, balance } = await setup({ allowlist: ['test.cheap'] })
    const r = await call('test.echo')
    expect(r.status).toBe(403)
    expect(r.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_allowlist', raised_by: 'operator', raise_via: 'PUT /v1/policies' })
    expect(r.body.message).toContain('PUT /v1/policies')
    expect(await balance()).toBe(500)
    expect((await call('test.cheap')).status).toBe(200)
  })

  test('account allowlist → rule account_allowlist; it binds the owner token too, and both lists must allow', async () => {
    const { owner, call } = await setup({ allowlist: ['test.*'] }, { allowlist: ['test.cheap'] })
    expect((await call('test.echo')).body).toMatchObject({ error: 'POLICY_DENIED', rule: 'account_allowlist' })
    expect((await call('test.echo', owner.token)).body.rule).toBe('account_allowlist')
    expect((await call('test.cheap')).status).toBe(200)
  })

  test('per_call_max → rule per_call_max with the cap and the price', async () => {
    const { call } = await setup({ per_call_max: 4 })
    const r = await call('test.echo')
    expect(r.status).toBe(403)
    expect(r.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'per_call_max', cap: 4, price: 5 })
    expect((await call('test.cheap')).status).toBe(200)
  })

  test("/errors.md lists every context field these refusals carry (the registry is the catalog's one source)", async () => {
    const { owner, agent, call } = await setup({ per_call_max: 4 })
    const capped = await setup({ daily_cap: 0 })
    const refusals = [
      await call('test.echo'),
      await capped.call('test.echo'),
      await t.req('POST', '/v1/agents', { token: agent.token, body: { name: 'c', budget: 1, per_call_max: 5 } }),
      await t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { agt_AAAAAAAAAAAAAAAAAAAAAA: { daily_cap: 1 } } } }),
    ]
    const md = (await t.req('GET', '/errors.md')).text
    const undocumented = refusals.flatMap((r) => {
      const row = md.split('\n').find((l) => l.startsWith(`| \`${r.body.error}\` |`))!
      const documented = row.split('|').at(-2)!
      return Object.keys(r.body)
        .filter((k) => k !== 'error' && k !== 'message' && !documented.includes(`\`${k}\``))
        .map((k) => `${r.body.error}.${k}`)
    })
    expect(refusals.map((r) => r.body.error)).toEqual(['POLICY_DENIED', 'POLICY_DENIED', 'POLICY_DENIED', 'NOT_FOUND'])
    expect(undocumented).toEqual([])
  })

  test('agent daily cap → rule agent_daily_cap with cap, spent and resets_at; denied when spent + price > cap', async () => {
    const { call } = await setup({ daily_cap: 11 })
    expect((await call('test.echo')).status).toBe(200)
    expect((await call('test.echo')).status).toBe(200)
    const r = await call('test.echo')
    expect(r.status).toBe(403)
    expect(r.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_daily_cap', cap: 11, spent: 10, resets_at: resetsAt() })
    expect((await call('test.cheap')).status).toBe(200)
    expect((await call('test.cheap')).body.rule).toBe('agent_daily_cap')
  })

  test('account daily cap → DAILY_CAP_REACHED (429) with cap, spent, resets_at and raise_via; across agents and the owner', async () => {
    const { owner, call } = await setup({}, { daily_cap: 12 })
    expect((await call('test.echo')).status).toBe(200)
    expect((await call('test.echo', owner.token)).status).toBe(200)
    const r = await call('test.echo')
    expect(r.status).toBe(429)
    expect(r.body).toMatchObject({ error: 'DAILY_CAP_REACHED', cap: 12, spent: 10, resets_at: resetsAt(), raise_via: 'PUT /v1/policies' })
    expect((await call('test.echo', owner.token)).body.error).toBe('DAILY_CAP_REACHED')
    // Raising the cap holds from the next call.
    await t.req('PUT', '/v1/policies', { token: owner.token, body: { account: { daily_cap: 15 } } })
    expect((await call('test.echo')).status).toBe(200)
  })

  test('the checks run in the documented order (docs/api.md §6): a killed agent is told so before any policy', async () => {
    const { owner, agent, call } = await setup({ allowlist: [], daily_cap: 0 }, { allowlist: [] })
    expect((await call('test.echo')).body.rule).toBe('agent_allowlist')
    await t.req('POST', `/v1/agents/${agent.id}/kill`, { token: owner.token })
    expect((await call('test.echo')).body.error).toBe('AGENT_KILLED')
  })

  test('the free lane: unpriced requests counted per account per HKT day → REQUEST_CAP_REACHED (429)', async () => {
    const { owner, call, balance } = await setup()
    expect((await call('test.free')).status).toBe(200)
    expect((await call('test.free', owner.token)).status).toBe(200)
    expect((await call('test.free')).status).toBe(200)
    const r = await call('test.free')
    expect(r.status).toBe(429)
    expect(r.body).toMatchObject({ error: 'REQUEST_CAP_REACHED', cap: 3, used: 3, resets_at: resetsAt() })
    expect(await balance()).toBe(500)
    // Priced calls are not request-capped.
    expect((await call('test.cheap')).status).toBe(200)
    // Another account has its own count.
    expect((await (await setup()).call('test.free')).status).toBe(200)
  })
})
