/**
 * A test app for the reconciliation with the providers' bills (docs/api.md §13d): OpenAI and
 * Anthropic both on the house lane (metered, house keys and admin keys set), OpenAI's legacy
 * `/v1/completions` opened on the house key at price 0 (unmetered), the vault on (an owner may
 * bring their own OpenAI key). The fake upstream answers the LLM APIs and the usage APIs.
 */
import { createLlmFake, type LlmFake } from '../fakes/llm'
import { createUsageApiFake, type UsageApiFake } from '../fakes/usage-api'
import { startTestApp, type TestApp, type TestAppOptions } from './harness'
import { meteredCatalog } from './metering'
import { OPENAI_HOUSE_KEY } from './proxy'
import { vaultEnv } from './vault'

export const ADMIN = 'founder-token-0123456789'
export const ANTHROPIC_HOUSE_KEY = 'sk-ant-house-0123456789abcdef'

export function billCatalog(fakeUrl: string) {
  const c = meteredCatalog(fakeUrl)
  c.providers.openai.proxy.price = 0
  c.providers.openai.proxy.house = { allow: ['POST /v1/completions'] }
  c.providers.anthropic.key_env = 'ANTHROPIC_TEST_KEY'
  delete c.providers.anthropic.byok
  delete c.providers.anthropic.proxy.metered.byok_fee_pct
  return c
}

export interface BillApp {
  t: TestApp
  llm: LlmFake
  usage: UsageApiFake
  base: string
}

export async function startBillApp(opt: Pick<TestAppOptions, 'env' | 'database' | 'prefix' | 'clock'> = {}): Promise<BillApp> {
  const usage = createUsageApiFake()
  const t = await startTestApp({
    ...opt,
    catalog: billCatalog,
    env: {
      ...vaultEnv(),
      ADMIN_TOKEN: ADMIN,
      OPENAI_TEST_KEY: OPENAI_HOUSE_KEY,
      ANTHROPIC_TEST_KEY: ANTHROPIC_HOUSE_KEY,
      OPENAI_ADMIN_KEY: usage.adminKeys.openai,
      ANTHROPIC_ADMIN_KEY: usage.adminKeys.anthropic,
      ...opt.env,
    },
  })
  const llm = createLlmFake()
  t.fake.handler = (req, seen) => {
    const answer = usage.handle(req, seen)
    if (answer) return answer
    // The legacy completions API: no route of ours meters it (the operator opened it at price 0).
    if (new URL(req.url).pathname === '/v1/completions')
      return Response.json({ id: 'cmpl-fake', object: 'text_completion', model: 'gpt-legacy-instruct', choices: [{ text: 'hi', index: 0 }], usage: { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 } })
    return llm.handler(req, seen)
  }
  return { t, llm, usage, base: await t.listen() }
}

/** One proxied request with the given token; its JSON answer. */
export async function proxied(base: string, token: string, path: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}/proxy${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: res.status, body: await res.json().catch(() => null) }
}

export const chat = (model: string) => ({ model, messages: [{ role: 'user', content: 'hello' }], max_tokens: 100 })
export const message = (model: string) => ({ model, messages: [{ role: 'user', content: 'hello' }], max_tokens: 100 })
