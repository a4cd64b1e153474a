/**
 * MCP keeps the REST API's guard: a killed or revoked agent is refused (its listing with the HTTP
 * 403 of any REST request, its tool calls as tool errors, nothing charged), an agent token neither
 * sees nor runs the owner-only tools, another account's resources answer NOT_FOUND, and the rate
 * limit counts MCP requests like REST requests (a paid call once, a call that reaches no tool too).
 */
import { describe, expect, test } from 'bun:test'
import { startTestApp } from '../helpers/harness'
import { redisBalance } from '../helpers/ledger'
import { callTool, mcpClient, mcpRig } from '../helpers/mcp'

const rig = mcpRig()
const connect = rig.connect

async function newAgent(ownerToken: string): Promise<{ id: string; token: string }> {
  const r = await rig.t.req('POST', '/v1/agents', { token: ownerToken, body: { name: 'guarded' } })
  if (r.status !== 201) throw new Error(`agent: ${r.status} ${r.text}`)
  return r.body
}

const listRaw = (token: string) =>
  fetch(`${rig.base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  })

describe('a killed or revoked agent', () => {
  test('killed: its tool calls are AGENT_KILLED tool errors (paid or not), its listing a 403; nothing charged; revived, it works again', async () => {
    const a = await rig.t.signup()
    const agent = await newAgent(a.token)
    const c = await connect(agent.token)
    expect((await callTool(c, 'get_balance')).isError).toBe(false)
    expect((await rig.t.req('POST', `/v1/agents/${agent.id}/kill`, { token: a.token })).status).toBe(200)

    for (const [tool, args] of [['call_capability', { slug: 'test.echo' }], ['test_echo', {}], ['get_balance', {}], ['search_capabilities', { q: 'echo' }], ['propose', { kind: 'topup', value: 1000, reason: 'more' }]] as const) {
      const r = await callTool(c, tool, args)
      expect(r.isError, tool).toBe(true)
      expect(r.json, tool).toMatchObject({ error: 'AGENT_KILLED', agent_id: agent.id, reason: 'operator' })
    }
    const list = await listRaw(agent.token)
    expect(list.status).toBe(403)
    expect(await list.json()).toMatchObject({ error: 'AGENT_KILLED', agent_id: agent.id })
    await expect(mcpClient(rig.base, agent.token)).rejects.toThrow()
    expect(await redisBalance(rig.t, a.account_id)).toBe(500)

    await rig.t.req('POST', `/v1/agents/${agent.id}/revive`, { token: a.token })
    expect((await callTool(c, 'call_capability', { slug: 'test.echo' })).isError).toBe(false)
    expect(await redisBalance(rig.t, a.account_id)).toBe(495)
  })

  test('revoked: AGENT_REVOKED, for good', async () => {
    const a = await rig.t.signup()
    const agent = await newAgent(a.token)
    const c = await connect(agent.token)
    expect((await rig.t.req('DELETE', `/v1/agents/${agent.id}`, { token: a.token })).status).toBe(200)
    expect((await callTool(c, 'call_capability', { slug: 'test.echo' })).json).toMatchObject({ error: 'AGENT_REVOKED' })
    expect((await callTool(c, 'get_activity', {})).json).toMatchObject({ error: 'AGENT_REVOKED' })
    expect((await listRaw(agent.token)).status).toBe(403)
    expect(await redisBalance(rig.t, a.account_id)).toBe(500)
  })

  test('a rotated owner token is refused: 401', async () => {
    const a = await rig.t.signup()
    const c = await connect(a.token)
    const rotated = await rig.t.req('POST', '/v1/token/rotate', { token: a.token })
    expect(rotated.status).toBe(200)
    expect((await listRaw(a.token)).status).toBe(401)
    // A tool call with it is refused like any request with a bad bearer: HTTP 401, before any tool runs.
    const refused = (await callTool(c, 'get_balance').catch((e: unknown) => e)) as { code?: number; message?: string }
    expect(refused.code).toBe(401)
    expect(refused.message).toContain('UNAUTHORIZED')
    expect((await callTool(await connect(rotated.body.token), 'get_balance')).json.balance).toBe(500)
  })
})

describe('owner-only tools', () => {
  test('an agent token does not see them and is refused FORBIDDEN when it calls them anyway; nothing changes', async () => {
    const a = await rig.t.signup()
    const agent = await newAgent(a.token)
    const sibling = await newAgent(a.token)
    const c = await connect(agent.token)
    const names = (await c.listTools()).tools.map((x) => x.name)
    for (const [tool, args] of [
      ['list_agents', {}],
      ['kill_agent', { id: sibling.id }],
      ['revive_agent', { id: sibling.id }],
      ['set_policies', { agents: { [agent.id]: { daily_cap: null, per_call_max: null } } }],
    ] as const) {
      expect(names).not.toContain(tool)
      const r = await callTool(c, tool, args)
      expect(r.isError, tool).toBe(true)
      expect(r.json, tool).toMatchObject({ error: 'FORBIDDEN' })
    }
    expect((await rig.t.req('GET', '/v1/agents', { token: a.token })).body.agents.every((x: { state: string }) => x.state === 'active')).toBe(true)
  })
})

describe("another account's resources", () => {
  test('are unreachable: NOT_FOUND for its agents and proposals targets; listings show only the caller’s own', async () => {
    const a = await rig.t.signup()
    const b = await rig.t.signup()
    const aAgent = await newAgent(a.token)
    const aClient = await connect(a.token)
    await callTool(aClient, 'call_capability', { slug: 'test.echo', params: { q: 'secret of a' } })
    const bClient = await connect(b.token)

    expect((await callTool(bClient, 'kill_agent', { id: aAgent.id })).json).toMatchObject({ error: 'NOT_FOUND', resource: 'agent' })
    expect((await callTool(bClient, 'revive_agent', { id: aAgent.id })).json).toMatchObject({ error: 'NOT_FOUND' })
    const policies = await callTool(bClient, 'set_policies', { agents: { [aAgent.id]: { daily_cap: 1 } } })
    expect(policies.json).toMatchObject({ error: 'NOT_FOUND' })
    expect((await callTool(bClient, 'propose', { kind: 'raise_daily_cap', value: 10, agent_id: aAgent.id, reason: 'x' })).json.error).toBe('NOT_FOUND')
    expect((await callTool(bClient, 'list_agents')).json).toEqual({ agents: [] })
    expect((await callTool(bClient, 'get_activity', {})).json.calls).toEqual([])
    expect((await callTool(bClient, 'get_balance')).json.balance).toBe(500)

    const aAgents = (await rig.t.req('GET', '/v1/agents', { token: a.token })).body.agents
    expect(aAgents).toMatchObject([{ id: aAgent.id, state: 'active', daily_cap: null }])
    expect(await redisBalance(rig.t, a.account_id)).toBe(495)
  })
})

describe('rate limit', () => {
  test("MCP requests count against the token's limit like REST requests; a paid tool call counts once", async () => {
    const limited = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: '7' } })
    try {
      const url = await limited.listen()
      const a = await limited.signup()
      // Connecting is three requests: initialize, notifications/initialized, and the GET for a stream (405).
      const c = await mcpClient(url, a.token)
      expect((await callTool(c, 'call_capability', { slug: 'test.echo' })).isError).toBe(false) // 4: counted in the debit only
      expect((await callTool(c, 'get_balance')).isError).toBe(false) // 5
      expect((await callTool(c, 'test_echo', {})).isError).toBe(false) // 6
      expect((await callTool(c, 'get_balance')).isError).toBe(false) // 7
      const over = await callTool(c, 'call_capability', { slug: 'test.echo' })
      expect(over.json).toMatchObject({ error: 'RATE_LIMITED' })
      expect(over.json.retry_after_s).toBeGreaterThan(0)
      expect((await callTool(c, 'get_balance')).json.error).toBe('RATE_LIMITED')
      expect((await limited.req('GET', '/v1/balance', { token: a.token })).status).toBe(429)
      expect(await redisBalance(limited, a.account_id)).toBe(490)
      await c.close()
    } finally {
      await limited.close()
    }
  })

  test("a paid tool's refused arguments count against the limit once and answer a killed agent AGENT_KILLED, as POST /v1/call's refusals before the debit do", async () => {
    const limited = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: '4' } })
    try {
      const url = await limited.listen()
      const a = await limited.signup()
      const call = (token: string, name: string, args: string) =>
        fetch(`${url}/mcp`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18', authorization: `Bearer ${token}` },
          body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${name}","arguments":${args}}}`,
        }).then(async (r) => ((await r.json()) as any).result.structuredContent)
      // Refused by the tool's schema, its text rule, the depth limit: before the debit, where a paid call is counted.
      const refused: [string, string][] = [
        ['call_capability', '{"slug":"test.echo","extra":1}'],
        ['call_capability', '{"slug":"test.echo","idempotency_key":"has space"}'],
        ['test_echo', '{"x":"nul\\u0000"}'],
        ['test_echo', `{"x":${'['.repeat(600)}${']'.repeat(600)}}`],
      ]
      for (const [name, args] of refused) expect((await call(a.token, name, args)).error, `${name} ${args.slice(0, 60)}`).toBe('BAD_REQUEST')
      // "Rate limits count every request" (docs/api.md §6): four refusals used up the limit of four.
      expect((await call(a.token, 'call_capability', '{"slug":"test.echo","extra":1}')).error).toBe('RATE_LIMITED')
      expect((await limited.req('GET', '/v1/balance', { token: a.token })).status).toBe(429)

      // A killed agent hears that it is killed, as POST /v1/call answers it, not which argument is wrong.
      const b = await limited.signup()
      const agent = (await limited.req('POST', '/v1/agents', { token: b.token, body: { name: 'killed' } })).body
      expect((await limited.req('POST', `/v1/agents/${agent.id}/kill`, { token: b.token })).status).toBe(200)
      const rest = await limited.req('POST', '/v1/call/test.echo', { token: agent.token, body: {}, headers: { 'idempotency-key': 'has space' } })
      expect(rest.body).toMatchObject({ error: 'AGENT_KILLED' })
      expect(await call(agent.token, 'call_capability', '{"slug":"test.echo","idempotency_key":"has space"}')).toEqual(rest.body)
      expect(await redisBalance(limited, a.account_id)).toBe(500)
    } finally {
      await limited.close()
    }
  })

  test('a chunked body past MAX_BODY_BYTES is refused after the admission, as on REST: counted, and a killed agent hears AGENT_KILLED', async () => {
    const limited = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: '3', MAX_BODY_BYTES: '1000' } })
    try {
      const url = await limited.listen()
      const send = (token: string) => {
        const big = new TextEncoder().encode(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"${'a'.repeat(5000)}"}}`)
        // A stream declares no Content-Length: the body is counted as it is read.
        const body = new ReadableStream({ start: (c) => (c.enqueue(big), c.close()) })
        return fetch(`${url}/mcp`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
          body,
          duplex: 'half',
        } as RequestInit)
      }
      const a = await limited.signup()
      for (let i = 0; i < 3; i++) {
        const r = await send(a.token)
        expect(r.status).toBe(413)
        expect(await r.json()).toMatchObject({ error: 'BAD_REQUEST', field: 'body' })
      }
      expect((await send(a.token)).status).toBe(429)
      expect((await limited.req('GET', '/v1/balance', { token: a.token })).status).toBe(429)

      const b = await limited.signup()
      const agent = (await limited.req('POST', '/v1/agents', { token: b.token, body: { name: 'killed' } })).body
      await limited.req('POST', `/v1/agents/${agent.id}/kill`, { token: b.token })
      const killed = await send(agent.token)
      expect(killed.status).toBe(403)
      expect(await killed.json()).toMatchObject({ error: 'AGENT_KILLED', agent_id: agent.id })
    } finally {
      await limited.close()
    }
  })

  test('a tools/call that never reaches a tool (a notification, malformed params, a header or message the transport refuses, a task) counts once, at the route', async () => {
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_balance', arguments: {} } }
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' }
    const unreached: [unknown, Record<string, string>?][] = [
      [{ jsonrpc: '2.0', method: 'tools/call', params: call.params }], // a notification: 202
      [{ ...call, params: { name: 7 } }], // -32602
      [{ ...call, params: { name: 'get_balance', arguments: 'x' } }], // -32602
      [{ ...call, extra: true }], // not a JSON-RPC message: 400
      [{ ...call, id: 4.5 }], // 400
      [{ ...call, params: { ...call.params, task: { ttl: 1000 } } }], // no tasks capability
      [call, { ...headers, accept: 'application/json' }], // 406
      [call, { ...headers, 'mcp-protocol-version': '1999-01-01' }], // 400
    ]
    const limited = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: String(unreached.length) } })
    try {
      const url = await limited.listen()
      const a = await limited.signup()
      const post = (body: unknown, h: Record<string, string> = headers) =>
        fetch(`${url}/mcp`, { method: 'POST', headers: { ...h, authorization: `Bearer ${a.token}` }, body: JSON.stringify(body) }).then((r) => r.text())
      for (const [body, h] of unreached) await post(body, h)
      // "Rate limits count every request" (docs/api.md §6): the limit is used up.
      expect((await limited.req('GET', '/v1/balance', { token: a.token })).status).toBe(429)

      // A call the SDK answers (here with _meta) reaches its tool: counted there, not twice.
      const b = await limited.signup()
      const meta = { ...call, params: { ...call.params, _meta: { progressToken: 1 } } }
      for (let i = 1; i < unreached.length; i++) {
        const r = await fetch(`${url}/mcp`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${b.token}` }, body: JSON.stringify(meta) })
        expect(((await r.json()) as any).result.structuredContent.balance).toBe(500)
      }
      expect((await limited.req('GET', '/v1/balance', { token: b.token })).status).toBe(200)
      expect((await limited.req('GET', '/v1/balance', { token: b.token })).status).toBe(429)
    } finally {
      await limited.close()
    }
  })
})
