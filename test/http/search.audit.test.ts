/**
 * What an agent reads to decide what to buy: GET /v1/search's price is what POST /v1/call debits.
 * A metered capability (docs/api.md §7) is charged by its tokens, so it shows price 0 and its models'
 * prices per 1,000,000 tokens — the ones /llms-full.txt lists for its route and the call charges.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { capabilityTool } from '../../src/mcp/capability-tools'
import { ProviderKeys } from '../../src/vault/provider-key'
import { costMicro, GPT, startMeteredApp } from '../helpers/metering'
import type { TestApp } from '../helpers/harness'
import type { LlmFake } from '../fakes/llm'

let t: TestApp
let llm: LlmFake
beforeAll(async () => {
  ;({ t, llm } = await startMeteredApp({ RATE_LIMIT_PER_IP: '1000' }))
})
afterAll(async () => {
  await t.close()
})

const search = async (q: string) => (await t.req('GET', `/v1/search?q=${encodeURIComponent(q)}`)).body

describe('GET /v1/search on a metered capability', () => {
  test('shows price 0 and the token prices the call is charged by (the flat price was shown, never debited)', async () => {
    const [hit] = (await search('llm.test.chat')).results
    expect(hit).toMatchObject({ slug: 'llm.test.chat', price: 0, status: 'live' })
    expect(hit.metered).toEqual({ dialect: 'openai', unit: 'credits per 1,000,000 tokens', min_output: 16, models: expect.objectContaining({ 'gpt-test': GPT }) })

    const a = await t.signup()
    llm.usage = { input: 12_000, cached: 3_000, output: 2_500 }
    const r = await t.req('POST', '/v1/call/llm.test.chat', { token: a.token, body: { model: 'gpt-test', max_tokens: 4000, messages: [{ role: 'user', content: 'hi' }] } })
    expect(r.status).toBe(200)
    const d = (await t.req('GET', `/v1/activity/${r.body.call_id}`, { token: a.token })).body
    // The charge, computed from the prices search showed and the tokens the activity reports.
    const shown = hit.metered.models['gpt-test']
    expect(r.body.charged).toBe(Math.floor(costMicro(shown, d.tokens) / 1e6))
    expect(r.body.charged).toBeGreaterThan(0)
    expect(a.balance - r.body.balance).toBe(r.body.charged)
  })

  test('/llms-full.txt lists the same prices for the route the capability borrows', async () => {
    const [hit] = (await search('llm.test.chat')).results
    const txt = (await t.req('GET', '/llms-full.txt')).text
    for (const [id, p] of Object.entries(hit.metered.models as Record<string, typeof GPT>))
      expect(txt).toContain(`| ${id} | ${p.input} (`)
    expect(txt).toContain(`| gpt-test | ${GPT.input} ($0.150) | ${GPT.cached_input} | – | ${GPT.output} ($0.600) | ${GPT.max_output} |`)
  })

  test("the capability's MCP tool names its token prices, not a flat price per call", async () => {
    const tool = capabilityTool(t.s, new ProviderKeys(() => t.s.vaultedKey, t.s.log), t.s.catalog.capabilities.get('llm.test.chat')!)
    expect(tool.description).toContain(`gpt-test ${GPT.input} in / ${GPT.output} out, max output ${GPT.max_output}`)
    expect(tool.description).not.toContain('credits per call')
  })
})

describe('GET /v1/search folds Unicode and case', () => {
  test('a full-width or upper-case query finds what its plain form finds', async () => {
    for (const q of ['CHAT', 'ＣＨＡＴ', 'Ｌｌｍ.ｔｅｓｔ.ｃｈａｔ', 'METERED'])
      expect({ q, slugs: (await search(q)).results.map((r: { slug: string }) => r.slug) }).toEqual({ q, slugs: ['llm.test.chat'] })
  })
})
