/**
 * Run budgets (docs/api.md §13c) on the proxy and on metered calls: the header counts a proxied
 * request against its run and never reaches the provider; a metered call's reservation counts until
 * its settle gives the run back what was not charged; a run with little left clamps the ceiling.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { LlmFake } from '../fakes/llm'
import type { TestApp } from '../helpers/harness'
import { BIG, costMicro, startMeteredApp } from '../helpers/metering'
import { eventually } from '../helpers/proxy'

let t: TestApp
let llm: LlmFake
let base: string
beforeAll(async () => {
  ;({ t, llm, base } = await startMeteredApp())
})
afterAll(async () => {
  await t.close()
})

const agentOf = async () => {
  const owner = await t.signup()
  const agent = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'llm-worker' } })).body
  return { owner, agent }
}
const chat = (token: string, run: string | null, body: Record<string, unknown>) =>
  fetch(`${base}/proxy/openai/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(run === null ? {} : { 'x-budget-run': run }) },
    body: JSON.stringify({ model: 'gpt-big', messages: [{ role: 'user', content: 'hi' }], ...body }),
  })
const runOf = async (token: string, id: string) => ((await t.req('GET', '/v1/runs', { token })).body.runs as any[]).find((r) => r.id === id)
const credits = (micro: number) => Math.floor(micro / 1e6)

describe('run budgets on the proxy', () => {
  test('a metered request counts its reservation, then its settle gives the run back what was not charged', async () => {
    const { owner, agent } = await agentOf()
    llm.usage = { input: 40, cached: 0, output: 120 }
    const seenBefore = t.fake.seen.length
    const res = await chat(agent.token, 'm1; max=500', { max_tokens: 1000 })
    expect(res.status).toBe(200)
    const reserved = Number(res.headers.get('x-pab-reserved'))
    expect(reserved).toBeGreaterThan(100)
    const header = res.headers.get('x-pab-run')!
    expect(header).toMatch(new RegExp(`^m1; max=500; spent=${reserved}; expires_at=\\d{4}-`))
    await res.text()
    // The provider never sees the header.
    const sent = t.fake.seen.slice(seenBefore)
    expect(sent.length).toBe(1)
    expect(Object.keys(sent[0]!.headers).map((h) => h.toLowerCase())).not.toContain('x-budget-run')
    const charged = credits(costMicro(BIG, { input: 40, cached: 0, output: 120 }))
    const run = await eventually(() => runOf(owner.token, 'm1'), (r) => r?.spent === charged)
    expect(run).toMatchObject({ agent_id: agent.id, max: 500, spent: charged, state: 'open' })
  })

  test('a run with little left clamps the output ceiling to what it can pay', async () => {
    const { owner, agent } = await agentOf()
    llm.usage = { input: 10, cached: 0, output: 50 }
    // No ceiling named: max_output (32768) would reserve ~3300 credits; the run leaves 60.
    const res = await chat(agent.token, 'small; max=60', {})
    expect(res.status).toBe(200)
    const clamped = Number(res.headers.get('x-pab-max-tokens-clamped'))
    expect(clamped).toBeGreaterThanOrEqual(16)
    expect(Number(res.headers.get('x-pab-reserved'))).toBeLessThanOrEqual(60)
    await res.text()
    await eventually(() => runOf(owner.token, 'small'), (r) => r?.spent === credits(costMicro(BIG, { input: 10, cached: 0, output: 50 })))
    // A ceiling the run cannot pay is refused by the run, before any byte goes upstream.
    const before = t.fake.seen.length
    const refused = await chat(agent.token, 'small; max=60', { max_tokens: 5000 })
    expect(refused.status).toBe(403)
    expect(await refused.json()).toMatchObject({ error: 'POLICY_DENIED', rule: 'run_budget', run_id: 'small', reason: 'exhausted' })
    expect(t.fake.seen.length).toBe(before)
  })

  test('a flat proxied request counts its price; a malformed header or the owner token is refused before any debit', async () => {
    const { owner, agent } = await agentOf()
    // The house lane opens openai's /v1/ at its flat price (3): whatever the fake answers there, it is charged.
    const models = (token: string, run: string) => fetch(`${base}/proxy/openai/v1/models`, { headers: { authorization: `Bearer ${token}`, 'x-budget-run': run } })
    const ok = await models(agent.token, 'f; max=3')
    expect(ok.status).toBeLessThan(500)
    await ok.text()
    expect(ok.headers.get('x-pab-run')).toMatch(/^f; max=3; spent=3; expires_at=/)
    const over = await models(agent.token, 'f; max=3')
    expect(await over.json()).toMatchObject({ error: 'POLICY_DENIED', rule: 'run_budget', run_id: 'f', spent: 3 })
    const bad = await models(agent.token, 'f; max=lots')
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ error: 'BAD_REQUEST', field: 'X-Budget-Run' })
    const asOwner = await models(owner.token, 'f; max=3')
    expect(asOwner.status).toBe(400)
    expect(await asOwner.json()).toMatchObject({ error: 'BAD_REQUEST', field: 'X-Budget-Run' })
  })

  test('a metered capability over POST /v1/call answers the run after its settle', async () => {
    const { owner, agent } = await agentOf()
    llm.usage = { input: 40, cached: 0, output: 120 }
    const r = await t.req('POST', '/v1/call/llm.test.chat', {
      token: agent.token,
      body: { model: 'gpt-big', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1000 },
      headers: { 'X-Budget-Run': 'cap; max=900' },
    })
    expect(r.status).toBe(200)
    expect(r.body.run).toMatchObject({ id: 'cap', max: 900, spent: r.body.charged })
    expect((await runOf(owner.token, 'cap')).spent).toBe(r.body.charged)
  })
})
