/**
 * docs/api.md §6 order, everywhere: agent state and the rate limit come first. A killed or revoked
 * token is counted in its rate window like any other (past the limit it gets RATE_LIMITED, so it
 * cannot hammer forever), and no refused token ever makes the service read the key vault.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'
import { vaultKey } from '../helpers/vault'

const LIMIT = 60
let t: TestApp
let vaultReads = 0
beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: String(LIMIT), RATE_LIMIT_PER_IP: '100000', VAULT_MASTER_KEY: Buffer.alloc(32, 9).toString('base64') } })
  // Counts the real vault's lookups (the proxy and the call path read it through `s`).
  const real = t.s.vaultedKey
  t.s.vaultedKey = (accountId, provider) => {
    vaultReads++
    return real(accountId, provider)
  }
})
afterAll(async () => {
  await t.close()
})

/** Start of a fresh minute window: every test gets a clean sliding minute. */
function freshMinute() {
  t.clock.set(Math.ceil((t.clock.now() + 120_000) / 60_000) * 60_000 + 1_000)
}

async function agentIn(state: 'killed' | 'revoked' | 'active') {
  const owner = await t.signup()
  const r = await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'a' } })
  expect(r.status).toBe(201)
  const agent = r.body as { id: string; token: string }
  if (state === 'killed') expect((await t.req('POST', `/v1/agents/${agent.id}/kill`, { token: owner.token })).status).toBe(200)
  if (state === 'revoked') expect((await t.req('DELETE', `/v1/agents/${agent.id}`, { token: owner.token })).status).toBe(200)
  return { owner, agent }
}

async function errorsOf(n: number, send: () => Promise<{ status: number; body: any }>): Promise<string[]> {
  const out: string[] = []
  for (let i = 0; i < n; i++) out.push((await send()).body.error)
  return out
}

const expected = (refusal: string, n: number) => [...Array(LIMIT).fill(refusal), ...Array(n - LIMIT).fill('RATE_LIMITED')]

describe('a refused token is still rate-limited', () => {
  test('a killed token sending 70 paid calls a minute: AGENT_KILLED for 60, then RATE_LIMITED', async () => {
    freshMinute()
    const { agent } = await agentIn('killed')
    const errors = await errorsOf(70, () => t.req('POST', '/v1/call/test.echo', { token: agent.token, body: {} }))
    expect(errors).toEqual(expected('AGENT_KILLED', 70))
  })

  test('a killed token on reads (authorize.lua): AGENT_KILLED for 60, then RATE_LIMITED', async () => {
    freshMinute()
    const { agent } = await agentIn('killed')
    const errors = await errorsOf(70, () => t.req('GET', '/v1/balance', { token: agent.token }))
    expect(errors).toEqual(expected('AGENT_KILLED', 70))
  })

  test('a revoked token on the proxy: AGENT_REVOKED for 60, then RATE_LIMITED', async () => {
    freshMinute()
    const { agent } = await agentIn('revoked')
    const errors = await errorsOf(70, () => t.req('POST', '/proxy/fake/v1/chat', { token: agent.token, body: {} }))
    expect(errors).toEqual(expected('AGENT_REVOKED', 70))
  })
})

describe('agent state before the vault', () => {
  test('a killed token on a byok proxy route → AGENT_KILLED, the vault never read', async () => {
    freshMinute()
    const { owner, agent } = await agentIn('killed')
    await vaultKey(t, owner.token, 'sk-byok-vaulted-0000')
    const before = vaultReads
    const r = await t.req('POST', '/proxy/fakebyok/v1/chat', { token: agent.token, body: {} })
    expect(r.status).toBe(403)
    expect(r.body.error).toBe('AGENT_KILLED')
    expect(vaultReads).toBe(before)
  })

  test('a killed token with no vaulted key on a byok proxy route → AGENT_KILLED, not VAULT_KEY_MISSING', async () => {
    freshMinute()
    const { agent } = await agentIn('killed')
    const before = vaultReads
    const r = await t.req('POST', '/proxy/fakebyok/v1/chat', { token: agent.token, body: {} })
    expect(r.body.error).toBe('AGENT_KILLED')
    expect(vaultReads).toBe(before)
  })

  test('a killed or revoked token on a byok capability → its state, the vault never read', async () => {
    freshMinute()
    for (const state of ['killed', 'revoked'] as const) {
      const { agent } = await agentIn(state)
      const before = vaultReads
      const r = await t.req('POST', '/v1/call/test.byok', { token: agent.token, body: {} })
      expect(r.body.error).toBe(state === 'killed' ? 'AGENT_KILLED' : 'AGENT_REVOKED')
      expect(vaultReads).toBe(before)
    }
  })

  test('a live agent past its rate limit on a byok route → RATE_LIMITED, the vault never read', async () => {
    freshMinute()
    const { owner, agent } = await agentIn('active')
    await vaultKey(t, owner.token, 'sk-byok-vaulted-0001')
    for (let i = 0; i < LIMIT; i++) expect((await t.req('GET', '/v1/balance', { token: agent.token })).status).toBe(200)
    const before = vaultReads
    expect((await t.req('POST', '/proxy/fakebyok/v1/chat', { token: agent.token, body: {} })).body.error).toBe('RATE_LIMITED')
    expect((await t.req('POST', '/v1/call/test.byok', { token: agent.token, body: {} })).body.error).toBe('RATE_LIMITED')
    expect(vaultReads).toBe(before)
  })
})

describe('a missing key after the gates: refused, charged nothing, the key free for a retry', () => {
  test('byok proxy without a vaulted key → VAULT_KEY_MISSING, balance and ledger whole', async () => {
    freshMinute()
    const a = await t.signup()
    const r = await t.req('POST', '/proxy/fakebyok/v1/chat', { token: a.token, body: {} })
    expect(r.status).toBe(409)
    expect(r.body).toMatchObject({ error: 'VAULT_KEY_MISSING', provider: 'fakebyok' })
    expect(await redisBalance(t, a.account_id)).toBe(500)
    await checkRedisInvariant(t, a.account_id)
  })

  test('byok capability without a key → BYOK_REQUIRED; the same Idempotency-Key runs once the key is vaulted', async () => {
    freshMinute()
    const a = await t.signup()
    const send = () => t.req('POST', '/v1/call/test.byok', { token: a.token, body: { q: 'k' }, headers: { 'idempotency-key': 'byok-1' } })
    const first = await send()
    expect(first.status).toBe(402)
    expect(first.body.error).toBe('BYOK_REQUIRED')
    expect(await redisBalance(t, a.account_id)).toBe(500)
    await vaultKey(t, a.token, 'sk-byok-vaulted-0002')
    const second = await send()
    expect(second.status).toBe(200)
    expect(second.body.charged).toBe(1)
    expect(await redisBalance(t, a.account_id)).toBe(499)
    await checkRedisInvariant(t, a.account_id)
  })
})
