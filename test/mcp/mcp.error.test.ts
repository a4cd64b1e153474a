/**
 * Refusals over MCP: a tool error (isError) whose text is the REST error body, with the same code
 * and context as over HTTP — the 402 with its enable_url, a policy refusal, bad or too deeply nested
 * arguments; and the transport-level answers: 401 without a valid bearer, 405 for the stream a
 * stateless server lacks.
 */
import { describe, expect, test } from 'bun:test'
import { redisBalance } from '../helpers/ledger'
import { callTool, mcpClient, mcpRig } from '../helpers/mcp'

const rig = mcpRig()
const connect = rig.connect

const LIST = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }
const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${rig.base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(body) })

describe('a refusal is a tool error holding the REST error body', () => {
  test('402 PAYMENT_REQUIRED keeps human_readable and enable_url, as POST /v1/call answers it; nothing is charged', async () => {
    const a = await rig.t.signup()
    const c = await connect(a.token)
    expect((await callTool(c, 'call_capability', { slug: 'test.pricey' })).isError).toBe(false)
    const r = await callTool(c, 'call_capability', { slug: 'test.pricey' })
    expect(r.isError).toBe(true)
    expect(r.json).toMatchObject({ error: 'PAYMENT_REQUIRED', balance: 200, price: 300, reason: 'insufficient_balance' })
    expect(r.json.enable_url).toMatch(/^http:\/\/pab\.test\/mandate\?ref=mr_/)
    expect(r.json.human_readable).toContain(r.json.enable_url)
    expect(r.structured).toEqual(r.json)
    const rest = await rig.t.req('POST', '/v1/call/test.pricey', { token: a.token, body: {} })
    expect(rest.status).toBe(402)
    expect(r.json).toEqual(rest.body)
    // The per-capability tool refuses alike.
    expect((await callTool(c, 'test_pricey', {})).json).toEqual(rest.body)
    expect(await redisBalance(rig.t, a.account_id)).toBe(200)
  })

  test("a policy refusal: the agent's allowlist and per_call_max, as over REST", async () => {
    const a = await rig.t.signup()
    const ag = await rig.t.req('POST', '/v1/agents', { token: a.token, body: { name: 'narrow', allowlist: ['test.cheap', 'test.echo'], per_call_max: 1 } })
    const c = await connect(ag.body.token)
    const outside = await callTool(c, 'call_capability', { slug: 'test.search', params: { q: 'x' } })
    expect(outside.isError).toBe(true)
    expect(outside.json).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_allowlist', raise_via: 'PUT /v1/policies' })
    expect(outside.json).toEqual((await rig.t.req('POST', '/v1/call/test.search', { token: ag.body.token, body: { q: 'x' } })).body)
    const tooDear = await callTool(c, 'test_echo', {})
    expect(tooDear.json).toMatchObject({ error: 'POLICY_DENIED', rule: 'per_call_max' })
    expect((await callTool(c, 'test_cheap', {})).isError).toBe(false)
    expect(await redisBalance(rig.t, a.account_id)).toBe(499)
  })

  test('a provider failure is refunded and says so', async () => {
    const a = await rig.t.signup()
    const r = await callTool(await connect(a.token), 'call_capability', { slug: 'test.fail' })
    expect(r.isError).toBe(true)
    expect(r.json).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true, provider_status: 500 })
    expect(await redisBalance(rig.t, a.account_id)).toBe(500)
  })

  test('top_up without a mandate: 402 with reason no_mandate', async () => {
    const a = await rig.t.signup()
    const r = await callTool(await connect(a.token), 'top_up', {})
    expect(r.json).toMatchObject({ error: 'PAYMENT_REQUIRED', reason: 'no_mandate' })
    expect(r.json).toEqual((await rig.t.req('POST', '/v1/topup', { token: a.token, body: {} })).body)
  })

  test('an unknown capability and an unknown tool', async () => {
    const a = await rig.t.signup()
    const c = await connect(a.token)
    expect((await callTool(c, 'call_capability', { slug: 'no.such' })).json).toMatchObject({ error: 'UNKNOWN_API', slug: 'no.such' })
    expect((await callTool(c, 'no_such_tool', {})).json).toMatchObject({ error: 'NOT_FOUND', resource: 'tool' })
  })
})

describe('arguments are checked as the REST bodies are', () => {
  test('schema, unknown fields and control characters → BAD_REQUEST naming the field; nothing charged', async () => {
    const a = await rig.t.signup()
    const c = await connect(a.token)
    const cases: [string, Record<string, unknown>, string][] = [
      ['get_activity', { limit: 0 }, 'limit'],
      ['get_activity', { limit: 10, page: 2 }, 'page'],
      ['search_capabilities', {}, 'q'],
      ['call_capability', { slug: 'test.search', params: {} }, 'q'],
      ['call_capability', { slug: 'test.echo', idempotency_key: 'has space' }, 'idempotency_key'],
      ['call_capability', { slug: 'test.echo', extra: 1 }, 'extra'],
      ['file_support_problem', { category: 'bug', summary: 'nul\u0000here' }, 'summary'],
      ['file_support_problem', { category: 'bug', summary: 'fine', payload: 'x' }, 'payload'],
      ['request_vault_link', { provider: 'tab\tprovider' }, 'provider'],
      ['propose', { kind: 'raise_daily_cap', value: 10 }, 'reason'],
      ['test_search', { q: '' }, 'q'],
    ]
    for (const [tool, args, field] of cases) {
      const r = await callTool(c, tool, args)
      expect(r.isError, `${tool} ${JSON.stringify(args)}`).toBe(true)
      expect(r.json, `${tool} ${JSON.stringify(args)}`).toMatchObject({ error: 'BAD_REQUEST', field })
    }
    // A multi-line summary is free text, as on POST /v1/support.
    expect((await callTool(c, 'file_support_problem', { category: 'bug', summary: 'two\nlines' })).isError).toBe(false)
    // A capability's params are its free text, as the REST call's body: several lines pass, NUL does not.
    const nul = await callTool(c, 'call_capability', { slug: 'test.echo', params: { note: 'nul\u0000here' } })
    expect(nul.json).toMatchObject({ error: 'BAD_REQUEST', field: 'params.note' })
    expect(await redisBalance(rig.t, a.account_id)).toBe(500)
    const lines = await callTool(c, 'call_capability', { slug: 'test.echo', params: { note: 'two\nlines' } })
    expect(lines.isError, JSON.stringify(lines.json)).toBe(false)
    const rest = await rig.t.req('POST', '/v1/call/test.echo', { token: a.token, body: { note: 'two\nlines' } })
    expect(rest.status).toBe(200)
    expect(await redisBalance(rig.t, a.account_id)).toBe(500 - lines.json.charged - rest.body.charged)
  })
})

describe('arguments nested too deep', () => {
  test('params nested deeper than 512 levels → BAD_REQUEST naming the field and the limit, not INTERNAL; nothing charged', async () => {
    const a = await rig.t.signup()
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n)
    // 200k levels in a 400 KB body: JSON.parse takes them, a recursive walk over them (or JSON.stringify) would overflow the stack.
    const send = (tool: string, args: string) =>
      fetch(`${rig.base}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18', authorization: `Bearer ${a.token}` },
        body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${tool}","arguments":${args}}}`,
      }).then(async (r) => ((await r.json()) as any).result)
    for (const [tool, args, field] of [
      ['call_capability', `{"slug":"test.echo","params":{"x":${deep(200_000)}}}`, 'params'],
      ['test_echo', `{"x":${deep(200_000)}}`, 'x'],
    ]) {
      const r = await send(tool!, args!)
      expect(r.isError, tool).toBe(true)
      expect(r.structuredContent, tool).toMatchObject({ error: 'BAD_REQUEST', field })
      expect(r.structuredContent.expected).toContain('512')
    }
    expect(await redisBalance(rig.t, a.account_id)).toBe(500)
    // At the limit: the arguments object, params and 510 arrays are 512 levels.
    const atLimit = await send('call_capability', `{"slug":"test.echo","params":{"x":${deep(510)}}}`)
    expect(atLimit.isError).toBeUndefined()
    expect(await redisBalance(rig.t, a.account_id)).toBe(495)
  })
})

describe('the transport', () => {
  test('no bearer or a bad one → HTTP 401 UNAUTHORIZED with the JSON error body; the official client cannot connect', async () => {
    for (const headers of [{}, { authorization: 'Bearer sk_notarealtokennotarealtokennotarealtoken12' }, { authorization: 'Basic abc' }] as Record<string, string>[]) {
      const r = await post(LIST, headers)
      expect(r.status).toBe(401)
      expect(r.headers.get('content-type')).toContain('application/json')
      expect(await r.json()).toMatchObject({ error: 'UNAUTHORIZED' })
    }
    // A tool call without a bearer is refused the same way, before anything runs.
    const call = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_balance', arguments: {} } })
    expect(call.status).toBe(401)
    await expect(mcpClient(rig.base, 'sk_notarealtokennotarealtokennotarealtoken12')).rejects.toThrow()
  })

  test('GET and DELETE: a stateless server has no stream and no session → 405 (after admission)', async () => {
    const a = await rig.t.signup()
    const get = await fetch(`${rig.base}/mcp`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${a.token}` } })
    expect(get.status).toBe(405)
    expect(get.headers.get('allow')).toBe('POST')
    expect((await fetch(`${rig.base}/mcp`, { method: 'DELETE', headers: { authorization: `Bearer ${a.token}` } })).status).toBe(405)
    expect((await fetch(`${rig.base}/mcp`, { headers: { accept: 'text/event-stream' } })).status).toBe(401)
  })

  test('a body that is not JSON → BAD_REQUEST; a message without the Accept the transport requires → its 406', async () => {
    const a = await rig.t.signup()
    const bad = await fetch(`${rig.base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${a.token}` }, body: '{not json' })
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ error: 'BAD_REQUEST', field: 'body' })
    const noAccept = await fetch(`${rig.base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${a.token}` }, body: JSON.stringify(LIST) })
    expect(noAccept.status).toBe(406)
  })

  test('a batch that cancels its own requests is still answered in full: the paid call with its call_id, charged once (a stateless server has nothing to cancel)', async () => {
    const a = await rig.t.signup()
    const auth = { authorization: `Bearer ${a.token}`, 'mcp-protocol-version': '2025-03-26' }
    const cancel = (requestId: number) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'changed my mind' } })
    const batch = [
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'call_capability', arguments: { slug: 'test.echo', params: { q: 'x' } } } },
      cancel(1),
      { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} },
      cancel(2),
    ]
    // Honoured, the cancellation left its request unanswered and the JSON answer waiting for it forever,
    // after the debit: the call was charged and its call_id never told.
    const r = await fetch(`${rig.base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...auth },
      body: JSON.stringify(batch),
      signal: AbortSignal.timeout(3000),
    })
    expect(r.status).toBe(200)
    const answers = (await r.json()) as any[]
    expect(answers.map((x) => x.id).sort()).toEqual([1, 2])
    const paid = answers.find((x) => x.id === 1).result
    expect(paid.isError).toBeUndefined()
    expect(paid.structuredContent).toMatchObject({ slug: 'test.echo', charged: 5, balance: 495 })
    expect(paid.structuredContent.call_id).toMatch(/^call_/)
    expect(answers.find((x) => x.id === 2).result.tools.length).toBeGreaterThan(0)
    expect(await redisBalance(rig.t, a.account_id)).toBe(495)
  })

  test('a batch using one request id twice is refused before anything runs (its second answer was dropped after both were charged)', async () => {
    const a = await rig.t.signup()
    const call = (id: number | string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'call_capability', arguments: { slug: 'test.echo' } } })
    const send = (batch: unknown[]) =>
      fetch(`${rig.base}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-03-26', authorization: `Bearer ${a.token}` },
        body: JSON.stringify(batch),
      })
    const twice = await send([call(1), call(1)])
    expect(twice.status).toBe(400)
    expect(await twice.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } })
    expect(await redisBalance(rig.t, a.account_id)).toBe(500)
    // 1 and "1" are two ids: both answered, each charged once.
    const two = (await (await send([call(1), call('1')])).json()) as any[]
    expect(two.map((x) => x.result.structuredContent.charged)).toEqual([5, 5])
    expect(await redisBalance(rig.t, a.account_id)).toBe(490)
  })

  test('malformed tools/call params → JSON-RPC invalid params (-32602); a method the server has no handler for → -32601 "Method not found"; nothing charged', async () => {
    const a = await rig.t.signup()
    const auth = { authorization: `Bearer ${a.token}`, 'mcp-protocol-version': '2025-06-18' }
    for (const params of [{ arguments: { slug: 'test.echo' } }, { name: 7 }, { name: 'call_capability', arguments: 'test.echo' }, { name: 'call_capability', arguments: [] }]) {
      const r = await post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params }, auth)
      expect(r.status).toBe(200)
      const body = (await r.json()) as any
      expect(body).toMatchObject({ jsonrpc: '2.0', id: 3, error: { code: -32602 } })
      expect(body.error.message).toContain('Invalid tools/call request')
    }
    const unknown = await post({ jsonrpc: '2.0', id: 4, method: 'resources/list', params: {} }, auth)
    expect(await unknown.json()).toEqual({ jsonrpc: '2.0', id: 4, error: { code: -32601, message: 'Method not found' } })
    expect(await redisBalance(rig.t, a.account_id)).toBe(a.balance)
  })
})
