/**
 * An OAuth grant and its agent's state (docs/mcp-oauth.md, "Revoking"): a killed agent's grant keeps
 * rotating so that a revive lets the client go on; a revoked or expired agent's grant ends at its
 * next refresh (invalid_grant), its access token with it. A file of its own: each connection
 * registers a client, and the registrations per address per hour are bounded.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { connectClient, exchange, mcpList, refresh } from '../helpers/oauth'

let t: TestApp
let owner: { token: string; account_id: string }

beforeAll(async () => {
  t = await startTestApp()
  owner = await t.signup(`oauth-agent-${t.prefix}@example.com`)
}, 30_000)
afterAll(async () => {
  await t?.close()
})

describe('a grant and its agent', () => {
  test('a killed agent refreshes (a revive lets the client go on); a revoked or expired one ends the grant at its refresh', async () => {
    const connect = async (name: string, limits: Record<string, string> = {}) => {
      const { client, code, verifier } = await connectClient(t, owner.token, { budget: '12', agent_name: name, ...limits })
      const tokens = (await (await exchange(t, { code, clientId: client.client_id, verifier })).json()) as { access_token: string; refresh_token: string }
      const list = (await t.req('GET', '/v1/agents', { token: owner.token })).body.agents as { id: string; name: string }[]
      return { client, tokens, agent: list.find((a) => a.name === name)!.id }
    }
    const killed = await connect('killed')
    expect((await t.req('POST', `/v1/agents/${killed.agent}/kill`, { token: owner.token })).status).toBe(200)
    const r1 = await refresh(t, killed.client.client_id, killed.tokens.refresh_token)
    expect(r1.status).toBe(200)
    expect((await t.req('POST', `/v1/agents/${killed.agent}/revive`, { token: owner.token })).status).toBe(200)
    expect((await mcpList(t, ((await r1.json()) as { access_token: string }).access_token)).status).toBe(200)

    const revoked = await connect('revoked')
    expect((await t.req('DELETE', `/v1/agents/${revoked.agent}`, { token: owner.token })).status).toBe(200)
    const r2 = await refresh(t, revoked.client.client_id, revoked.tokens.refresh_token)
    expect(r2.status).toBe(400)
    expect(await r2.json()).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('revoked or expired') })
    // The grant is gone: its access token too, and the refresh token stays refused.
    expect((await mcpList(t, revoked.tokens.access_token)).status).toBe(401)
    expect((await refresh(t, revoked.client.client_id, revoked.tokens.refresh_token)).status).toBe(400)

    const expired = await connect('expired', { expires_days: '1' })
    t.clock.advance(86_400_000)
    try {
      const r3 = await refresh(t, expired.client.client_id, expired.tokens.refresh_token)
      expect(r3.status).toBe(400)
      expect(await r3.json()).toMatchObject({ error: 'invalid_grant' })
    } finally {
      t.clock.advance(-86_400_000)
    }
    // Not ended by its clock alone: the grant was deleted at that refresh.
    expect((await mcpList(t, expired.tokens.access_token)).status).toBe(401)
  })
})
