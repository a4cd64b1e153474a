/**
 * A metered proxy answer ends once its settle is queued on Redis, not once applied (issue 14,
 * DebitedCall.settleQueued): the settle goes on the connection before the answer's last byte, so
 * whatever this instance does next — the client's next request, its balance or activity read —
 * runs after it. Read back with no waiting, after each of a run of plain and streamed calls.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createLlmFake, type LlmFake } from '../fakes/llm'
import { startTestApp, type TestApp } from '../helpers/harness'
import { chargesOf, costMicro, GPT, meteredCatalog } from '../helpers/metering'
import { OPENAI_HOUSE_KEY } from '../helpers/proxy'
import { vaultEnv } from '../helpers/vault'

let t: TestApp
let base: string
let llm: LlmFake

beforeAll(async () => {
  t = await startTestApp({ catalog: meteredCatalog, env: { ...vaultEnv(), OPENAI_TEST_KEY: OPENAI_HOUSE_KEY } })
  llm = createLlmFake()
  t.fake.handler = llm.handler
  base = await t.listen()
})
afterAll(async () => {
  await t.close()
})

test('the call, the balance and the activity read right after each answer show its settle', async () => {
  const a = await t.signup()
  llm.usage = { input: 700, cached: 100, output: 900 }
  const cost = costMicro(GPT, llm.usage)
  const costs: number[] = []
  for (let i = 0; i < 24; i++) {
    const stream = i % 2 === 1
    const res = await fetch(`${base}/proxy/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', max_tokens: 2000, stream, messages: [{ role: 'user', content: 'x'.repeat(800) }] }),
    })
    expect(res.status).toBe(200)
    await res.arrayBuffer()
    costs.push(cost)
    const { charged } = chargesOf(costs)
    // No polling: each read is this instance's next command after the answer ended.
    const detail = await t.req('GET', `/v1/activity/${res.headers.get('x-pab-call-id')}`, { token: a.token })
    expect(detail.status).toBe(200)
    expect(detail.body).toMatchObject({ usage_source: 'provider', charged: charged.at(-1), outcome: 'ok' })
    const balance = await t.req('GET', '/v1/balance', { token: a.token })
    expect(balance.body.balance).toBe(500 - charged.reduce((x, y) => x + y, 0))
  }
})
