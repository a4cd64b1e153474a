/**
 * Run budgets over MCP (docs/api.md §13c): a tools/call's `_meta["pab/run"]` is the X-Budget-Run
 * header's value; the paid tool's result shows the run; refusals are tool errors with the REST body.
 */
import { describe, expect, test } from 'bun:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { redisBalance } from '../helpers/ledger'
import { mcpRig } from '../helpers/mcp'

const rig = mcpRig()

async function newAgent(ownerToken: string): Promise<{ id: string; token: string }> {
  const r = await rig.t.req('POST', '/v1/agents', { token: ownerToken, body: { name: 'mcp runner' } })
  if (r.status !== 201) throw new Error(`agent: ${r.status} ${r.text}`)
  return r.body
}

/** A tools/call with `_meta` (the SDK path, not the direct one): its text content as JSON. */
async function callWithRun(client: Client, name: string, args: Record<string, unknown>, run: unknown) {
  const r = (await client.callTool({ name, arguments: args, _meta: { 'pab/run': run } })) as CallToolResult
  const item = r.content[0]
  if (item?.type !== 'text') throw new Error('expected a text item')
  return { isError: r.isError === true, json: JSON.parse(item.text), structured: r.structuredContent as Record<string, any> | undefined }
}

describe('run budgets over MCP', () => {
  test('call_capability and a capability tool count against the run named in _meta, and their results show it', async () => {
    const owner = await rig.t.signup()
    const agent = await newAgent(owner.token)
    const client = await rig.connect(agent.token)
    const first = await callWithRun(client, 'call_capability', { slug: 'test.echo', params: { q: 'a' } }, 'mcp-job; max=12; ttl=120')
    expect(first.isError).toBe(false)
    expect(first.json.run).toMatchObject({ id: 'mcp-job', max: 12, spent: 5 })
    expect(first.structured?.run).toEqual(first.json.run)
    const second = await callWithRun(client, 'test_echo', { q: 'b' }, 'mcp-job; max=12')
    expect(second.json.run).toMatchObject({ id: 'mcp-job', spent: 10 })
    const over = await callWithRun(client, 'test_echo', { q: 'c' }, 'mcp-job; max=12')
    expect(over.isError).toBe(true)
    expect(over.json).toMatchObject({ error: 'POLICY_DENIED', rule: 'run_budget', run_id: 'mcp-job', reason: 'exhausted', spent: 10 })
    // Without _meta the call is not the run's.
    const plain = await client.callTool({ name: 'test_echo', arguments: { q: 'd' } })
    expect(JSON.parse((plain.content as { text: string }[])[0]!.text).run).toBeUndefined()
    const listed = (await rig.t.req('GET', '/v1/runs', { token: agent.token })).body.runs
    expect(listed).toMatchObject([{ id: 'mcp-job', agent_id: agent.id, max: 12, spent: 10, state: 'open' }])
    // The list_runs tool answers what GET /v1/runs answers.
    const tool = await client.callTool({ name: 'list_runs', arguments: {} })
    expect(JSON.parse((tool.content as { text: string }[])[0]!.text)).toEqual({ runs: listed })
  })

  test('a malformed run, a non-string one, or the owner token: a tool error naming _meta["pab/run"], nothing debited', async () => {
    const owner = await rig.t.signup()
    const agent = await newAgent(owner.token)
    const client = await rig.connect(agent.token)
    for (const bad of ['no max', 'x; max=1; ttl=0', 42, { id: 'x' }, 'job\n; max=5', 'job; max=5\u0000']) {
      const r = await callWithRun(client, 'call_capability', { slug: 'test.echo', params: { q: 'a' } }, bad)
      expect(r.isError).toBe(true)
      expect(r.json).toMatchObject({ error: 'BAD_REQUEST', field: '_meta["pab/run"]' })
    }
    const asOwner = await callWithRun(await rig.connect(owner.token), 'test_echo', { q: 'a' }, 'x; max=5')
    expect(asOwner.json).toMatchObject({ error: 'BAD_REQUEST', field: '_meta["pab/run"]' })
    expect(await redisBalance(rig.t, owner.account_id)).toBe(500)
    expect((await rig.t.req('GET', '/v1/runs', { token: owner.token })).body.runs).toEqual([])
  })
})
