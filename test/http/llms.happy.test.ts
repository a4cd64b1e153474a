/** /llms-full.txt tells an agent every proxy route, what it costs, whose key it uses and how to set up its SDK. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { llmCatalog, OPENAI_HOUSE_KEY } from '../helpers/proxy'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({
    catalog: (url) => {
      const c = llmCatalog(url)
      return { ...c, providers: { ...c.providers, openai: { ...c.providers.openai, proxy: { price: 0, paths: ['/v1/'], house: { allow: ['GET /v1/models'], owned: ['/v1/responses'] } } } } }
    },
    env: { OPENAI_TEST_KEY: OPENAI_HOUSE_KEY, UNPRICED_DAILY_REQUEST_CAP: '1000' },
  })
})
afterAll(async () => {
  await t.close()
})

describe('GET /llms-full.txt', () => {
  test('is public plain text listing each proxy route with its cost, key style and auth', async () => {
    const r = await t.req('GET', '/llms-full.txt')
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toStartWith('text/plain')
    const txt = r.text
    expect(txt).toContain('### proxy:openai')
    expect(txt).toContain('### proxy:anthropic')
    expect(txt).toContain('http://pab.test/proxy/openai{path}')
    expect(txt).toContain('unpriced (0 credits); counted against the daily request cap of 1000 requests')
    expect(txt).toContain('2 credits per request')
    expect(txt).toContain('bring-your-own-key only')
    expect(txt).toContain('`Authorization: Bearer <token>`')
    expect(txt).toContain('`x-api-key: <token>`')
    expect(txt).toContain('Allowlist pattern: `proxy:openai`')
    expect(txt).not.toContain(OPENAI_HOUSE_KEY)
  })

  test('says what the house key serves on each route and that everything else needs your own key', async () => {
    const txt = (await t.req('GET', '/llms-full.txt')).text
    const openai = txt.slice(txt.indexOf('### proxy:openai'), txt.indexOf('### proxy:anthropic'))
    expect(openai).toContain('On the house key (no vaulted key of yours) this route serves only:')
    expect(openai).toContain('opened paths, at the cost above: `GET /v1/models`')
    expect(openai).toContain('your own objects (ones this account created through the house key) under: `/v1/responses`')
    // No vault on this deployment: a closed path is simply not served.
    expect(openai).toContain('everything else needs your own key: PROXY_UNKNOWN_PROVIDER (404, with house_allow)')
    expect(openai).toContain('scope headers you send (OpenAI-Organization, OpenAI-Project, …) are dropped')
    // A byok route has no house lane to describe.
    expect(txt.slice(txt.indexOf('### proxy:anthropic'))).not.toContain('On the house key')
  })

  test('carries copy-paste SDK settings for OpenAI and Anthropic with our token as the api key', async () => {
    const txt = (await t.req('GET', '/llms-full.txt')).text
    expect(txt).toContain("new OpenAI({ baseURL: 'http://pab.test/proxy/openai/v1', apiKey: process.env.PAB_TOKEN })")
    expect(txt).toContain('OpenAI(base_url="http://pab.test/proxy/openai/v1", api_key=os.environ["PAB_TOKEN"])')
    expect(txt).toContain("new Anthropic({ baseURL: 'http://pab.test/proxy/anthropic', apiKey: process.env.PAB_TOKEN })")
    expect(txt).toContain('Anthropic(base_url="http://pab.test/proxy/anthropic"')
  })

  test('the proxy routes appear in the OpenAPI document', async () => {
    const doc = (await t.req('GET', '/openapi.json')).body
    const ops = Object.entries(doc.paths as Record<string, Record<string, unknown>>).filter(([p]) => p.startsWith('/proxy/'))
    expect(ops.length).toBeGreaterThan(0)
    expect(Object.keys(ops[0]![1]).sort()).toEqual(['delete', 'get', 'patch', 'post', 'put'])
  })
})
