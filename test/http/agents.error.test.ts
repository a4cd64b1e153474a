import { OPERATOR_ONLY } from '../../src/admission'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

async function withAgent(body: Record<string, unknown> = { name: 'a' }) {
  const owner = await t.signup()
  const r = await t.req('POST', '/v1/agents', { token: owner.token, body })
  expect(r.status).toBe(201)
  return { owner, agent: r.body as { id: string; token: string } }
}

describe('agent token errors', () => {
  test('a killed agent: AGENT_KILLED (403) on calls and on member reads, with the remedy', async () => {
    const { owner, agent } = await withAgent()
    await t.req('POST', `/v1/agents/${agent.id}/kill`, { token: owner.token })
    const call = await t.req('POST', '/v1/call/test.echo', { token: agent.token, body: {} })
    expect(call.status).toBe(403)
    expect(call.body).toMatchObject({ error: 'AGENT_KILLED', agent_id: agent.id })
    expect(call.body.message).toContain('revive')
    const read = await t.req('GET', '/v1/balance', { token: agent.token })
    expect(read.status).toBe(403)
    expect(read.body.error).toBe('AGENT_KILLED')
  })

  test("AGENT_KILLED's message names the revive route with the agent's own id (or the killed ancestor's)", async () => {
    const { owner, agent } = await withAgent()
    await t.req('POST', `/v1/agents/${agent.id}/kill`, { token: owner.token })
    const r = await t.req('GET', '/v1/balance', { token: agent.token })
    expect(r.body.error).toBe('AGENT_KILLED')
    // It read "POST /v1/agents/id/revive": the template's {id} is no context field.
    expect(r.body.message).toContain(`POST /v1/agents/${agent.id}/revive`)
    const sub = await withAgent()
    const kid = (await t.req('POST', '/v1/agents', { token: sub.agent.token, body: { name: 'kid', budget: 1 } })).body
    await t.req('POST', `/v1/agents/${sub.agent.id}/kill`, { token: sub.owner.token })
    const byAncestor = await t.req('GET', '/v1/balance', { token: kid.token })
    expect(byAncestor.body).toMatchObject({ error: 'AGENT_KILLED', agent_id: kid.id, by_ancestor: sub.agent.id })
    expect(byAncestor.body.message).toContain('by_ancestor')
  })

  test('a revoked agent: AGENT_REVOKED (403); revive and kill → CONFLICT; nothing brings it back', async () => {
    const { owner, agent } = await withAgent()
    expect((await t.req('DELETE', `/v1/agents/${agent.id}`, { token: owner.token })).status).toBe(200)
    const call = await t.req('POST', '/v1/call/test.echo', { token: agent.token, body: {} })
    expect(call.status).toBe(403)
    expect(call.body).toMatchObject({ error: 'AGENT_REVOKED', agent_id: agent.id })
    expect(call.body.message).toContain('new agent token')
    for (const action of ['revive', 'kill']) {
      const r = await t.req('POST', `/v1/agents/${agent.id}/${action}`, { token: owner.token })
      expect(r.status).toBe(409)
      expect(r.body.error).toBe('CONFLICT')
      expect(r.body.reason).toContain('revoked')
    }
    expect((await t.req('POST', '/v1/call/test.echo', { token: agent.token, body: {} })).body.error).toBe('AGENT_REVOKED')
  })

  test('an agent token on every operator surface → FORBIDDEN (403); its own sub-agents are docs/api.md §8 (test/http/subagents.*)', async () => {
    const { agent } = await withAgent()
    const surfaces: [string, string, unknown?][] = [
      ['POST', `/v1/agents/${agent.id}/revive`],
      ['PUT', '/v1/policies', { agents: { [agent.id]: { daily_cap: null } } }],
    ]
    for (const [method, path, body] of surfaces) {
      const r = await t.req(method, path, { token: agent.token, body })
      expect([method, path, r.status, r.body.error]).toEqual([method, path, 403, 'FORBIDDEN'])
    }
    // The agent can still call: none of the refused requests changed it.
    expect((await t.req('POST', '/v1/call/test.cheap', { token: agent.token, body: {} })).status).toBe(200)
  })

  test('an agent token on an operator surface is FORBIDDEN before its body is judged (auth first)', async () => {
    const { agent } = await withAgent()
    // A malformed body used to answer BAD_REQUEST naming the field, a well-formed one FORBIDDEN.
    const surfaces: [string, string, unknown][] = [
      ['PUT', '/v1/policies', { account: { daily_cap: -1 } }],
      ['PUT', '/v1/policies', { bogus: 1 }],
      ['PUT', '/v1/policies', 'not json'],
      ['POST', `/v1/agents/${agent.id}/revive`, 'not json'],
      ['PUT', '/v1/mandate', { threshold: -1 }],
      ['POST', '/v1/proposals/prp_x/approve', { note: 5 }],
      ['PUT', '/v1/webhooks', { url: 5 }],
    ]
    for (const [method, path, body] of surfaces) {
      const r = await t.req(method, path, { token: agent.token, body })
      expect([method, path, r.status, r.body.error]).toEqual([method, path, 403, 'FORBIDDEN'])
    }
  })

  test('every operator-only surface the admission names is a route of the app (a renamed route would fall out silently)', () => {
    const routes = new Set((t.app.routes as unknown as { method: string; path: string }[]).map((r) => `${r.method} ${r.path}`))
    expect([...OPERATOR_ONLY].filter((r) => !routes.has(r))).toEqual([])
  })

  test("another account's agent id, or a made-up one → NOT_FOUND, and the agent is untouched", async () => {
    const { agent } = await withAgent()
    const stranger = await t.signup()
    for (const [method, path] of [
      ['POST', `/v1/agents/${agent.id}/kill`],
      ['POST', `/v1/agents/${agent.id}/revive`],
      ['DELETE', `/v1/agents/${agent.id}`],
      ['POST', '/v1/agents/agt_AAAAAAAAAAAAAAAAAAAAAA/kill'],
      ['POST', '/v1/agents/not-an-id/kill'],
    ] as const) {
      const r = await t.req(method, path, { token: stranger.token })
      expect([path, r.status, r.body.error]).toEqual([path, 404, 'NOT_FOUND'])
    }
    expect((await t.req('POST', '/v1/call/test.cheap', { token: agent.token, body: {} })).status).toBe(200)
  })

  test('no bearer, or an unknown one → UNAUTHORIZED (401)', async () => {
    expect((await t.req('GET', '/v1/agents')).body.error).toBe('UNAUTHORIZED')
    const r = await t.req('POST', '/v1/agents', { token: 'sk_' + 'x'.repeat(43), body: { name: 'n' } })
    expect(r.status).toBe(401)
  })

  test('malformed bodies → BAD_REQUEST naming the field', async () => {
    const owner = await t.signup()
    const cases: [unknown, string][] = [
      [{}, 'name'],
      [{ name: '' }, 'name'],
      [{ name: 'x'.repeat(65) }, 'name'],
      [{ name: 'n', daily_cap: -1 }, 'daily_cap'],
      [{ name: 'n', daily_cap: 1.5 }, 'daily_cap'],
      [{ name: 'n', per_call_max: 'ten' }, 'per_call_max'],
      [{ name: 'n', allowlist: 'test.echo' }, 'allowlist'],
      [{ name: 'n', allowlist: ['Test.Echo'] }, 'allowlist.0'],
      [{ name: 'n', allowlist: ['test.echo', 'bad pattern'] }, 'allowlist.1'],
      [{ name: 'n', allowlist: ['proxy:'] }, 'allowlist.0'],
      [{ name: 'n', token: 'ak_mine' }, 'token'],
    ]
    for (const [body, field] of cases) {
      const r = await t.req('POST', '/v1/agents', { token: owner.token, body })
      expect([JSON.stringify(body), r.status, r.body.error, r.body.field]).toEqual([JSON.stringify(body), 400, 'BAD_REQUEST', field])
    }
    expect((await t.req('GET', '/v1/agents', { token: owner.token })).body.agents).toEqual([])
  })
})
