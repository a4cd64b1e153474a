/**
 * Two API instances of one deployment (same Redis prefix, same Postgres, one clock): a kill,
 * revive, revoke or policy change made through one is honoured by the very next call on the other.
 * Both instances have resolved (and cached) the agent token before the change: the state is read
 * from the account's Redis slot by the debit script on every call, never from an instance's memory.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/clock'
import { startTestApp, type TestApp } from '../helpers/harness'

const ADMIN = 'founder-secret-0123456789abcdef'
let a: TestApp
let b: TestApp
const clock = new ManualClock(Date.now())
beforeAll(async () => {
  a = await startTestApp({ clock, env: { ADMIN_TOKEN: ADMIN } })
  b = await startTestApp({ clock, env: { ADMIN_TOKEN: ADMIN }, database: a.db, prefix: a.prefix })
})
afterAll(async () => {
  await b?.close()
  await a?.close()
})

async function agentOn(t: TestApp, body: Record<string, unknown> = { name: 'fleet-1' }) {
  const owner = await t.signup()
  const agent = (await t.req('POST', '/v1/agents', { token: owner.token, body })).body as { id: string; token: string }
  const call = (on: TestApp, slug = 'test.cheap') => on.req('POST', `/v1/call/${slug}`, { token: agent.token, body: {} })
  // Warm both instances: each has now resolved and cached the agent token.
  expect((await call(a)).status).toBe(200)
  expect((await call(b)).status).toBe(200)
  return { owner, agent, call }
}

describe('governance across two instances', () => {
  test('a kill on A is honoured by the next call on B; a revive on B by the next call on A', async () => {
    const { owner, agent, call } = await agentOn(a)
    expect((await a.req('POST', `/v1/agents/${agent.id}/kill`, { token: owner.token })).body.state).toBe('killed')
    const onB = await call(b)
    expect(onB.status).toBe(403)
    expect(onB.body.error).toBe('AGENT_KILLED')
    expect((await b.req('GET', '/v1/balance', { token: agent.token })).body.error).toBe('AGENT_KILLED')

    expect((await b.req('POST', `/v1/agents/${agent.id}/revive`, { token: owner.token })).body.state).toBe('active')
    expect((await call(a)).status).toBe(200)
  })

  test('a revoke on B is honoured by the next call on A, and A cannot revive it', async () => {
    const { owner, agent, call } = await agentOn(b)
    await b.req('DELETE', `/v1/agents/${agent.id}`, { token: owner.token })
    expect((await call(a)).body.error).toBe('AGENT_REVOKED')
    expect((await a.req('POST', `/v1/agents/${agent.id}/revive`, { token: owner.token })).status).toBe(409)
    expect((await call(b)).body.error).toBe('AGENT_REVOKED')
  })

  test('a policy change on A holds on the next call on B (both directions)', async () => {
    const { owner, agent, call } = await agentOn(a)
    await a.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [agent.id]: { allowlist: ['test.echo'] } } } })
    expect((await call(b, 'test.cheap')).body.rule).toBe('agent_allowlist')
    await b.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [agent.id]: { allowlist: null } }, account: { daily_cap: 2 } } })
    // 2 credits already spent by the warm-up calls: the account cap is now reached everywhere.
    expect((await call(a, 'test.cheap')).body.error).toBe('DAILY_CAP_REACHED')
    expect((await call(b, 'test.cheap')).body.error).toBe('DAILY_CAP_REACHED')
  })

  test('a founder pause on A reaches B at its next pause refresh (API_PAUSED), and the resume too', async () => {
    const { call } = await agentOn(a)
    await a.req('POST', '/admin/capabilities/test.cheap/pause', { token: ADMIN })
    expect((await call(a)).body.error).toBe('API_PAUSED')
    // B mirrors the shared pause set every second; run its tick now instead of sleeping.
    await b.s.pauses.refresh()
    expect((await call(b)).body.error).toBe('API_PAUSED')
    await b.req('POST', '/admin/capabilities/test.cheap/resume', { token: ADMIN })
    await a.s.pauses.refresh()
    expect((await call(a)).status).toBe(200)
  })
})
