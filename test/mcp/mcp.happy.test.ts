/**
 * The MCP endpoint through the official MCP TypeScript client against a listening service: the
 * tool list (owner and agent), each tool answering what its REST route answers, the paid call
 * charged once (an idempotency_key replay too), the per-capability tools, a founder's pause.
 */
import { describe, expect, test } from 'bun:test'
import { redisBalance } from '../helpers/ledger'
import { consentSandbox } from '../helpers/money'
import { vaultEnv } from '../helpers/vault'
import { callTool, mcpRig } from '../helpers/mcp'

const ADMIN = 'founder-secret-mcp-0123456789abcdef'
const SERVICE_TOOLS = ['search_capabilities', 'call_capability', 'get_balance', 'get_activity', 'top_up', 'request_vault_link', 'file_support_problem', 'propose']
const OWNER_TOOLS = ['list_agents', 'kill_agent', 'revive_agent', 'set_policies', 'approve_proposal', 'decline_proposal']

const rig = mcpRig({ env: { ADMIN_TOKEN: ADMIN, ...vaultEnv() } })
const connect = rig.connect

async function newAgent(ownerToken: string, body: Record<string, unknown> = {}): Promise<{ id: string; token: string }> {
  const r = await rig.t.req('POST', '/v1/agents', { token: ownerToken, body: { name: 'mcp agent', ...body } })
  if (r.status !== 201) throw new Error(`agent: ${r.status} ${r.text}`)
  return r.body
}

describe('tools/list', () => {
  test('an owner token sees every service tool and one tool per live capability, priced, with its params schema', async () => {
    const a = await rig.t.signup()
    const { tools } = await (await connect(a.token)).listTools()
    const names = tools.map((x) => x.name)
    for (const n of [...SERVICE_TOOLS, ...OWNER_TOOLS]) expect(names).toContain(n)
    // Live capabilities, by slug with '.' → '_'; test.nokey has no house key: unavailable, not listed.
    for (const n of ['test_echo', 'test_search', 'test_cheap', 'test_free', 'test_byok']) expect(names).toContain(n)
    expect(names).not.toContain('test_nokey')
    const search = tools.find((x) => x.name === 'test_search')!
    expect(search.inputSchema).toEqual({ type: 'object', required: ['q'], properties: { q: { type: 'string', minLength: 1 } } })
    expect(search.description).toContain('search the web for anything')
    expect(search.description).toContain('5 credits per call')
    expect(tools.find((x) => x.name === 'test_free')!.description).toContain('free')
    expect(tools.find((x) => x.name === 'test_byok')!.description).toContain('your own fakebyok key')
    // The service tools' schemas are the REST routes' models.
    const q = (tools.find((x) => x.name === 'search_capabilities')!.inputSchema.properties as Record<string, unknown>).q
    expect(q).toEqual({ type: 'string', minLength: 1, maxLength: 200 })
    const support = tools.find((x) => x.name === 'file_support_problem')!.inputSchema
    expect(support.required).toEqual(['category', 'summary'])
    expect(Object.keys(support.properties!).sort()).toEqual(['call_id', 'category', 'error_code', 'http_status', 'slug', 'summary'])
  })

  test('an agent token sees the same list without the owner-only tools', async () => {
    const a = await rig.t.signup()
    const agent = await newAgent(a.token)
    const owner = (await (await connect(a.token)).listTools()).tools.map((x) => x.name)
    const mine = (await (await connect(agent.token)).listTools()).tools.map((x) => x.name)
    for (const n of OWNER_TOOLS) expect(mine).not.toContain(n)
    expect(mine).toEqual(owner.filter((n) => !OWNER_TOOLS.includes(n)))
  })
})

describe('each tool answers what its REST route answers', () => {
  test('search_capabilities, get_balance, get_activity: the REST JSON, as text and as structuredContent', async () => {
    const a = await rig.t.signup()
    const c = await connect(a.token)
    const search = await callTool(c, 'search_capabilities', { q: 'echo' })
    expect(search.isError).toBe(false)
    expect(search.json).toEqual((await rig.t.req('GET', '/v1/search?q=echo')).body)
    expect(search.structured).toEqual(search.json)
    expect(search.json.results[0].slug).toBe('test.echo')

    await callTool(c, 'call_capability', { slug: 'test.echo', params: { q: 'one' } })
    const balance = await callTool(c, 'get_balance')
    expect(balance.json).toEqual((await rig.t.req('GET', '/v1/balance', { token: a.token })).body)
    expect(balance.json.balance).toBe(495)
    const activity = await callTool(c, 'get_activity', { limit: 5 })
    expect(activity.json).toEqual((await rig.t.req('GET', '/v1/activity?limit=5', { token: a.token })).body)
    expect(activity.json.calls).toHaveLength(1)
    expect(activity.json.calls[0]).toMatchObject({ slug: 'test.echo', charged: 5, refunded: false })
  })

  test('call_capability is POST /v1/call/{slug}: charged once, the answer carries the result, the charge and the balance', async () => {
    const a = await rig.t.signup()
    const c = await connect(a.token)
    const r = await callTool(c, 'call_capability', { slug: 'test.echo', params: { q: 'hello' } })
    expect(r.isError).toBe(false)
    expect(r.json).toMatchObject({ slug: 'test.echo', charged: 5, balance: 495, provider_status: 200, result: { echo: { q: 'hello' } } })
    expect(r.json.call_id).toMatch(/^call_/)
    expect(r.structured).toEqual(r.json)
    expect(await redisBalance(rig.t, a.account_id)).toBe(495)
    const rest = await rig.t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'hello' } })
    expect(Object.keys(rest.body).sort()).toEqual(Object.keys(r.json).sort())
    expect(await redisBalance(rig.t, a.account_id)).toBe(490)
  })

  test('params reach the provider as the agent wrote them (a 64-bit id, its spacing), as over REST; on each tool and both paths', async () => {
    const a = await rig.t.signup()
    const params = '{ "id": 12345678901234567891, "n": 1.10 }'
    const send = (name: string, args: string, meta = '') =>
      fetch(`${rig.base}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18', authorization: `Bearer ${a.token}` },
        body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${name}","arguments":${args}${meta}}}`,
      }).then(async (r) => ((await r.json()) as any).result)
    await rig.t.req('POST', '/v1/call/test.echo', { token: a.token, body: params })
    expect(rig.t.fake.seen.at(-1)!.body).toBe(params)
    for (const [name, args, meta] of [
      ['call_capability', `{"slug":"test.echo","params":${params}}`, ''],
      ['test_echo', params, ''],
      // _meta leaves the call to the SDK (src/mcp/direct-call.ts): the same text reaches the tool.
      ['call_capability', `{"slug":"test.echo","params":${params}}`, ',"_meta":{"progressToken":1}'],
    ]) {
      expect((await send(name!, args!, meta)).isError, name).toBeUndefined()
      expect(rig.t.fake.seen.at(-1)!.body, `${name}${meta}`).toBe(params)
    }
    expect(await redisBalance(rig.t, a.account_id)).toBe(480)
  })

  test('an idempotency_key replay answers the first call and is charged once, on MCP and across to REST', async () => {
    const a = await rig.t.signup()
    const c = await connect(a.token)
    const args = { slug: 'test.echo', params: { q: 'once' }, idempotency_key: 'mcp-key-1' }
    const first = await callTool(c, 'call_capability', args)
    const again = await Promise.all([1, 2, 3].map(() => callTool(c, 'call_capability', args)))
    for (const r of again) expect(r.text).toBe(first.text)
    // The same key and body over REST is the same request: answered from the same record.
    const rest = await rig.t.req('POST', '/v1/call/test.echo', { token: a.token, body: JSON.stringify({ q: 'once' }), headers: { 'idempotency-key': 'mcp-key-1' } })
    expect(rest.status).toBe(200)
    expect(rest.body.call_id).toBe(first.json.call_id)
    expect(await redisBalance(rig.t, a.account_id)).toBe(495)
    const activity = await rig.t.req('GET', '/v1/activity', { token: a.token })
    expect(activity.body.calls).toHaveLength(1)
  })

  test('a capability announced as its own tool is the same paid call', async () => {
    const a = await rig.t.signup()
    const c = await connect(a.token)
    const r = await callTool(c, 'test_search', { q: 'direct' })
    expect(r.isError).toBe(false)
    expect(r.json).toMatchObject({ slug: 'test.search', charged: 5, balance: 495, result: { echo: { q: 'direct' } } })
    // Its params schema holds as on POST /v1/call: nothing charged for a refused body.
    const bad = await callTool(c, 'test_search', {})
    expect(bad.isError).toBe(true)
    expect(bad.json).toMatchObject({ error: 'BAD_REQUEST', field: 'q' })
    expect(await redisBalance(rig.t, a.account_id)).toBe(495)
  })

  test('a charged answer nested too deep to send again as an object is still answered with its charge, as text only', async () => {
    const a = await rig.t.signup()
    const c = await connect(a.token)
    // 100k levels (200 KB, under PROXY_MAX_RESPONSE_BYTES): JSON.parse takes it, JSON.stringify of the parsed value overflows.
    const n = 100_000
    const deep = '['.repeat(n) + ']'.repeat(n)
    rig.t.fake.handler = () => new Response(deep, { headers: { 'content-type': 'application/json' } })
    try {
      const rest = await rig.t.req('POST', '/v1/call/test.echo', { token: a.token, body: {} })
      expect(rest.status).toBe(200)
      for (const [tool, args] of [['call_capability', { slug: 'test.echo' }], ['test_echo', {}]] as const) {
        const r = await callTool(c, tool, args)
        expect(r.isError, tool).toBe(false)
        expect(r.json, tool).toMatchObject({ slug: 'test.echo', charged: 5, provider_status: 200 })
        expect(r.json.call_id).toMatch(/^call_/)
        // The provider's answer whole, in the text; no structuredContent, which a tool without an outputSchema may leave out.
        expect(r.text.endsWith(`"result":${deep}}`)).toBe(true)
        expect(r.structured).toBeUndefined()
      }
    } finally {
      rig.t.fake.handler = null
    }
    expect((await c.listTools()).tools.filter((x) => 'outputSchema' in x).map((x) => x.name)).toEqual([])
    expect(await redisBalance(rig.t, a.account_id)).toBe(485)
  })

  test("the owner's tools: list_agents, kill_agent, revive_agent, set_policies take effect as their REST routes do", async () => {
    const a = await rig.t.signup()
    const agent = await newAgent(a.token)
    const c = await connect(a.token)
    const list = await callTool(c, 'list_agents')
    expect(list.json).toEqual((await rig.t.req('GET', '/v1/agents', { token: a.token })).body)
    expect(list.json.agents.map((x: { id: string }) => x.id)).toEqual([agent.id])

    const killed = await callTool(c, 'kill_agent', { id: agent.id })
    expect(killed.json).toMatchObject({ id: agent.id, state: 'killed', kill_reason: 'operator' })
    expect((await rig.t.req('POST', '/v1/call/test.echo', { token: agent.token, body: {} })).body.error).toBe('AGENT_KILLED')
    const revived = await callTool(c, 'revive_agent', { id: agent.id })
    expect(revived.json).toMatchObject({ id: agent.id, state: 'active' })
    expect((await rig.t.req('POST', '/v1/call/test.echo', { token: agent.token, body: {} })).status).toBe(200)

    const policies = await callTool(c, 'set_policies', { agents: { [agent.id]: { daily_cap: 7, allowlist: ['test.cheap'] } } })
    expect(policies.isError).toBe(false)
    expect(policies.json).toEqual((await rig.t.req('GET', '/v1/policies', { token: a.token })).body)
    expect(policies.json.agents[agent.id]).toMatchObject({ daily_cap: 7, allowlist: ['test.cheap'] })
    const denied = await rig.t.req('POST', '/v1/call/test.echo', { token: agent.token, body: {} })
    expect(denied.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_allowlist' })
  })

  test('top_up, request_vault_link, file_support_problem and propose reach their services', async () => {
    const a = await rig.t.signup()
    const agent = await newAgent(a.token)
    const c = await connect(agent.token)

    await consentSandbox(rig.t, a.token, { threshold: 0, refill: 1000, ceiling: 5000 })
    const topup = await callTool(c, 'top_up', {})
    expect(topup.isError).toBe(false)
    expect(topup.json).toMatchObject({ credits_added: 1000, balance: 1500 })
    expect(await redisBalance(rig.t, a.account_id)).toBe(1500)

    const link = await callTool(c, 'request_vault_link', { provider: 'fakebyok' })
    expect(link.json).toMatchObject({ provider: 'fakebyok' })
    expect(link.json.url).toMatch(/^http:\/\/pab\.test\/vault\//)
    expect((await rig.t.req('GET', new URL(link.json.url).pathname, { headers: { accept: 'application/json' } })).status).toBe(200)

    const problem = await callTool(c, 'file_support_problem', { category: 'provider', summary: 'test.echo was slow\nthree times', slug: 'test.echo', http_status: 504 })
    expect(problem.json).toMatchObject({ status: 'open' })
    const filed = await rig.t.req('GET', `/v1/support/${problem.json.id}`, { token: a.token })
    expect(filed.body).toMatchObject({ category: 'provider', summary: 'test.echo was slow\nthree times', slug: 'test.echo', http_status: 504 })

    const proposal = await callTool(c, 'propose', { kind: 'raise_daily_cap', value: 900, reason: 'a longer research task' })
    expect(proposal.json).toMatchObject({ kind: 'raise_daily_cap', value: 900, agent_id: agent.id, status: 'pending' })
    expect((await rig.t.req('GET', `/v1/proposals/${proposal.json.id}`, { token: a.token })).body).toEqual(proposal.json)
  })
})

describe('the tool list follows the catalog', () => {
  test("a capability the founder pauses leaves tools/list and answers API_PAUSED; resumed, it is back", async () => {
    const a = await rig.t.signup()
    const c = await connect(a.token)
    const names = async () => (await c.listTools()).tools.map((x) => x.name)
    expect(await names()).toContain('test_cheap')
    const paused = await rig.t.req('POST', '/admin/capabilities/test.cheap/pause', { token: ADMIN })
    expect(paused.status).toBe(200)
    try {
      const listed = await names()
      expect(listed).not.toContain('test_cheap')
      expect(listed).toContain('test_echo')
      // A client that listed before the pause learns it from the call, charged nothing.
      const direct = await callTool(c, 'test_cheap', {})
      expect(direct.json).toMatchObject({ error: 'API_PAUSED', slug: 'test.cheap' })
      expect((await callTool(c, 'call_capability', { slug: 'test.cheap' })).json.error).toBe('API_PAUSED')
      expect(await redisBalance(rig.t, a.account_id)).toBe(500)
    } finally {
      await rig.t.req('POST', '/admin/capabilities/test.cheap/resume', { token: ADMIN })
    }
    expect(await names()).toContain('test_cheap')
  })
})

describe('the configuration an agent needs', () => {
  test('/llms-full.txt names the MCP URL and the bearer header', async () => {
    const r = await rig.t.req('GET', '/llms-full.txt')
    expect(r.text).toContain('http://pab.test/mcp')
    expect(r.text).toContain('"Authorization": "Bearer ')
  })
})
