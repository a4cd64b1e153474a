/**
 * A plain tools/call is answered without the SDK (src/mcp/direct-call.ts): its answer must be the
 * one the SDK gives, byte for byte. Each case is sent twice — alone (the direct answer) and as a
 * batch of one (a message the direct path leaves to the SDK, which answers a one-message batch
 * with the single response) — and the two must agree in status, Content-Type and body. A spy on the
 * SDK's Server shows which path answered; whatever is not the plain case goes to the SDK.
 */
import { afterEach, describe, expect, spyOn, test } from 'bun:test'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js'
import { redisBalance } from '../helpers/ledger'
import { mcpRig } from '../helpers/mcp'

const rig = mcpRig()
const connects = spyOn(Server.prototype, 'connect')
afterEach(() => connects.mockClear())

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': LATEST_PROTOCOL_VERSION }
const call = (id: number | string, name: string, args?: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: args === undefined ? { name } : { name, arguments: args },
})

async function post(token: string, body: unknown, headers: Record<string, string> = HEADERS) {
  const r = await fetch(`${rig.base}/mcp`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${token}` }, body: JSON.stringify(body) })
  return { status: r.status, type: r.headers.get('content-type'), text: await r.text() }
}

/** An answer with its call ids (fresh per call) and balances (moved by a paid call) masked. */
const mask = (a: { status: number; type: string | null; text: string }) => ({
  ...a,
  text: a.text.replace(/call_[A-Za-z0-9_-]+/g, 'call_X').replace(/(\\?"balance\\?":)\d+/g, '$1N'),
})

/** The direct answer and the SDK's to the same message; asserts which path gave each. */
async function both(token: string, message: unknown) {
  connects.mockClear()
  const direct = await post(token, message)
  expect(connects).toHaveBeenCalledTimes(0)
  const sdk = await post(token, [message])
  expect(connects).toHaveBeenCalledTimes(1)
  return { direct, sdk }
}

describe('the direct answer is the SDK\'s', () => {
  test('results, refusals and errors of every kind: same status, Content-Type and bytes', async () => {
    const a = await rig.t.signup()
    const agent = (await rig.t.req('POST', '/v1/agents', { token: a.token, body: { name: 'direct' } })).body
    const cases: [string, unknown][] = [
      [a.token, call(1, 'get_balance', {})],
      [a.token, call('s-1', 'search_capabilities', { q: 'search' })],
      [a.token, call(2, 'get_balance')], // arguments absent
      [a.token, call(3, 'no_such_tool', {})],
      [a.token, call(4, 'get_activity', { limit: 0 })], // BAD_REQUEST, field limit
      [a.token, call(5, 'call_capability', { slug: 'no.such' })], // UNKNOWN_API
      [agent.token, call(6, 'list_agents', {})], // FORBIDDEN: owner-only
      [a.token, call(7, 'call_capability', { slug: 'test.fail' })], // PROVIDER_ERROR, refunded
    ]
    for (const [token, message] of cases) {
      const { direct, sdk } = await both(token, message)
      expect(mask(direct), JSON.stringify(message)).toEqual(mask(sdk))
      expect(direct.status).toBe(200)
      expect(direct.type).toBe('application/json')
    }
    expect(await redisBalance(rig.t, a.account_id)).toBe(500)
  })

  test('a paid call and a 402: the same answer but for the call id and the balance', async () => {
    const a = await rig.t.signup()
    const { direct, sdk } = await both(a.token, call(1, 'call_capability', { slug: 'test.cheap' }))
    const d = JSON.parse(direct.text)
    const s = JSON.parse(sdk.text)
    expect(d.result.structuredContent.charged).toBe(1)
    expect(s.result.structuredContent.charged).toBe(1)
    expect(mask(direct)).toEqual(mask(sdk))
    expect(direct.text).toContain('"balance":499')
    expect(await redisBalance(rig.t, a.account_id)).toBe(498)
    // 402: the balance (498) is short of test.pricey's 300 only after one success.
    expect(JSON.parse((await post(a.token, call(2, 'call_capability', { slug: 'test.pricey' }))).text).result.isError).toBeUndefined()
    const refused = await both(a.token, call(3, 'call_capability', { slug: 'test.pricey' }))
    expect(JSON.parse(refused.direct.text).result.structuredContent).toMatchObject({ error: 'PAYMENT_REQUIRED' })
    expect(mask(refused.direct)).toEqual(mask(refused.sdk))
    expect(await redisBalance(rig.t, a.account_id)).toBe(198)
  })

  test('a paid answer nested too deep for structuredContent: the same text-only answer on both paths', async () => {
    const a = await rig.t.signup()
    const n = 100_000
    rig.t.fake.handler = () => new Response('['.repeat(n) + ']'.repeat(n), { headers: { 'content-type': 'application/json' } })
    try {
      const { direct, sdk } = await both(a.token, call(1, 'call_capability', { slug: 'test.cheap' }))
      expect(direct.status).toBe(200)
      expect(direct.text).toContain('"charged\\":1')
      expect(JSON.parse(direct.text).result.structuredContent).toBeUndefined()
      expect(mask(direct)).toEqual(mask(sdk))
    } finally {
      rig.t.fake.handler = null
    }
    expect(await redisBalance(rig.t, a.account_id)).toBe(498)
  })
})

describe('what is not the plain case is the SDK\'s', () => {
  test('_meta, task or unknown params, an unknown top-level key, a fractional id, another protocol version or content type: the SDK answers', async () => {
    const a = await rig.t.signup()
    const variants: [unknown, Record<string, string>?][] = [
      [{ ...call(1, 'get_balance', {}), params: { name: 'get_balance', arguments: {}, _meta: { progressToken: 7 } } }],
      [{ ...call(2, 'get_balance', {}), params: { name: 'get_balance', arguments: {}, task: { ttl: 1000 } } }],
      [{ ...call(3, 'get_balance', {}), extra: true }],
      [call(4.5, 'get_balance', {})],
      [{ ...call(5, 'get_balance', {}), params: { name: 7 } }],
      [{ ...call(6, 'get_balance', {}), params: { name: 'get_balance', arguments: [1] } }],
      [call(7, 'get_balance', {}), { ...HEADERS, 'mcp-protocol-version': '1999-01-01' }],
      [call(8, 'get_balance', {}), { ...HEADERS, 'content-type': 'application/json; charset=utf-8' }],
      [call(9, 'get_balance', {}), { ...HEADERS, accept: 'application/json' }],
    ]
    for (const [message, headers] of variants) {
      connects.mockClear()
      const r = await post(a.token, message, headers)
      // The 406 (Accept) is the transport's before any server connects; every other goes through one.
      if (headers?.accept === 'application/json') expect(r.status).toBe(406)
      else expect(connects, JSON.stringify(message)).toHaveBeenCalledTimes(1)
    }
    // Two of them, answered by the SDK as before: an unsupported protocol version, invalid params.
    expect((await post(a.token, call(10, 'get_balance', {}), { ...HEADERS, 'mcp-protocol-version': '1999-01-01' })).status).toBe(400)
    const invalid = JSON.parse((await post(a.token, { ...call(11, 'get_balance'), params: { name: 7 } })).text)
    expect(invalid.error.code).toBe(-32602)
  })
})
