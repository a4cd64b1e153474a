import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { agents } from '../../src/db/schema'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

describe('agent tokens', () => {
  test('the operator creates a named agent: token shown once, policy echoed, listed with spent_today', async () => {
    const a = await t.signup()
    const r = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'crawler', daily_cap: 50, allowlist: ['test.*'], per_call_max: 10 } })
    expect(r.status).toBe(201)
    expect(r.body).toMatchObject({ name: 'crawler', state: 'active', daily_cap: 50, allowlist: ['test.*'], per_call_max: 10 })
    expect(r.body.id).toMatch(/^agt_[A-Za-z0-9_-]{22}$/)
    expect(r.body.token).toMatch(/^ak_[A-Za-z0-9_-]{43}$/)
    expect(Date.parse(r.body.created_at)).toBe(t.clock.now())
    expect(r.body).not.toHaveProperty('spent_today')

    const call = await t.req('POST', '/v1/call/test.echo', { token: r.body.token, body: { q: 'x' } })
    expect(call.status).toBe(200)
    expect(call.body.charged).toBe(5)

    const list = await t.req('GET', '/v1/agents', { token: a.token })
    expect(list.status).toBe(200)
    expect(list.body.agents).toEqual([
      {
        id: r.body.id,
        name: 'crawler',
        state: 'active',
        kill_reason: null,
        daily_cap: 50,
        allowlist: ['test.*'],
        per_call_max: 10,
        spent_today: 5,
        created_at: r.body.created_at,
        budget: null,
        spent_total: 5,
        parent_id: null,
        depth: 1,
        expires_at: null,
        // Not created by an MCP client's OAuth consent (docs/mcp-oauth.md).
        oauth_client: null,
      },
    ])
    expect(JSON.stringify(list.body)).not.toContain(r.body.token)
    // The agent's spend is the account's spend too.
    expect((await t.req('GET', '/v1/balance', { token: a.token })).body).toMatchObject({ balance: 495, spent_today: 5 })
  })

  test('defaults: no agent-level cap, allowlist or per-call maximum (null); listing is oldest first', async () => {
    const a = await t.signup()
    const first = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'one' } })
    t.clock.advance(1)
    const second = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'two', allowlist: [] } })
    expect(first.body).toMatchObject({ daily_cap: null, allowlist: null, per_call_max: null })
    expect(second.body.allowlist).toEqual([])
    const list = await t.req('GET', '/v1/agents', { token: a.token })
    expect(list.body.agents.map((x: { name: string }) => x.name)).toEqual(['one', 'two'])
    // An empty allowlist allows nothing.
    const denied = await t.req('POST', '/v1/call/test.echo', { token: second.body.token, body: {} })
    expect(denied.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_allowlist' })
  })

  test('kill → revive → kill → revoke, each answered with the agent; repeats are no-ops', async () => {
    const a = await t.signup()
    const ag = (await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'worker' } })).body
    const call = () => t.req('POST', '/v1/call/test.cheap', { token: ag.token, body: {} })
    const op = (method: string, path: string) => t.req(method, path, { token: a.token })

    expect((await call()).status).toBe(200)
    const killed = await op('POST', `/v1/agents/${ag.id}/kill`)
    expect(killed.status).toBe(200)
    expect(killed.body).toMatchObject({ id: ag.id, name: 'worker', state: 'killed', spent_today: 1 })
    expect((await call()).body.error).toBe('AGENT_KILLED')
    expect((await op('POST', `/v1/agents/${ag.id}/kill`)).body.state).toBe('killed')

    const revived = await op('POST', `/v1/agents/${ag.id}/revive`)
    expect(revived.status).toBe(200)
    expect(revived.body.state).toBe('active')
    expect((await call()).status).toBe(200)
    expect((await op('POST', `/v1/agents/${ag.id}/revive`)).body.state).toBe('active')

    expect((await op('POST', `/v1/agents/${ag.id}/kill`)).body.state).toBe('killed')
    const revoked = await op('DELETE', `/v1/agents/${ag.id}`)
    expect(revoked.status).toBe(200)
    expect(revoked.body.state).toBe('revoked')
    expect((await call()).body.error).toBe('AGENT_REVOKED')
    expect((await op('DELETE', `/v1/agents/${ag.id}`)).body.state).toBe('revoked')
    // Still listed, as revoked; the owner token is unaffected.
    const list = await op('GET', '/v1/agents')
    expect(list.body.agents[0]).toMatchObject({ id: ag.id, state: 'revoked', spent_today: 2 })
    expect((await t.req('POST', '/v1/call/test.cheap', { token: a.token, body: {} })).status).toBe(200)
  })

  test('an agent token works on member surfaces (balance, activity) of its own account', async () => {
    const a = await t.signup()
    const ag = (await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'reader' } })).body
    const bal = await t.req('GET', '/v1/balance', { token: ag.token })
    expect(bal.status).toBe(200)
    expect(bal.body.balance).toBe(500)
  })

  test('Postgres holds the newest state of every agent after the flush (version-guarded projection)', async () => {
    const a = await t.signup()
    const ag = (await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'durable', daily_cap: 7 } })).body
    await t.req('POST', `/v1/agents/${ag.id}/kill`, { token: a.token })
    await t.req('PUT', '/v1/policies', { token: a.token, body: { agents: { [ag.id]: { allowlist: ['test.echo', 'proxy:fake'], daily_cap: null } } } })
    await flushAll(t)
    const [row] = await t.s.db.db.select().from(agents).where(eq(agents.id, ag.id))
    expect(row).toMatchObject({ accountId: a.account_id, name: 'durable', state: 'killed', dailyCap: null, allowlist: ['test.echo', 'proxy:fake'], perCallMax: null, version: 3 })
    expect(row!.tokenHash).toMatch(/^[0-9a-f]{64}$/)
    await t.req('DELETE', `/v1/agents/${ag.id}`, { token: a.token })
    await flushAll(t)
    const [after] = await t.s.db.db.select().from(agents).where(eq(agents.id, ag.id))
    expect(after).toMatchObject({ state: 'revoked', version: 4, allowlist: ['test.echo', 'proxy:fake'] })
  })
})
