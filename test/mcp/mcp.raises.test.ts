/**
 * Temporary raises over MCP (docs/api.md §13b), through the official client: a refusal's tool
 * error tells the agent it may ask for a temporary raise; `propose` takes for_s; the owner's
 * `approve_proposal` approves for that long (or for its own for_s) and the raise lapses by itself;
 * an agent token cannot approve; a bad for_s is the REST 400 naming it.
 */
import { describe, expect, test } from 'bun:test'
import { callTool, mcpRig } from '../helpers/mcp'
import { hktDay } from '../../src/clock'

const rig = mcpRig()
const NOON = (hktDay(Date.now()) + 2) * 86400_000 - 8 * 3600_000 + 12 * 3600_000

describe('temporary raises over MCP', () => {
  test('refusal hint, propose with for_s, approve_proposal, the lapse', async () => {
    rig.t.clock.set(NOON)
    const o = await rig.t.signup()
    const agent = (await rig.t.req('POST', '/v1/agents', { token: o.token, body: { name: 'mcp', daily_cap: 1 } })).body
    const ac = await rig.connect(agent.token)
    const oc = await rig.connect(o.token)

    expect((await callTool(ac, 'test_cheap', { q: 'one' })).isError).toBe(false)
    const refused = await callTool(ac, 'test_cheap', { q: 'two' })
    expect(refused.isError).toBe(true)
    expect(refused.json).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_daily_cap', kind: 'raise_daily_cap', propose_via: 'POST /v1/proposals' })
    expect(refused.json.propose_temporary).toContain('for_s')

    const p = await callTool(ac, 'propose', { kind: 'raise_daily_cap', value: 3, reason: 'one more hour of crawling', for_s: 3600 })
    expect(p.json).toMatchObject({ status: 'pending', for_s: 3600, lapses_at: null })

    // Not the agent's to decide.
    const mine = await callTool(ac, 'approve_proposal', { id: p.json.id })
    expect(mine.isError).toBe(true)
    expect(mine.json.error).toBe('FORBIDDEN')

    const bad = await callTool(oc, 'approve_proposal', { id: p.json.id, for_s: 30 })
    expect(bad.isError).toBe(true)
    expect(bad.json).toMatchObject({ error: 'BAD_REQUEST', field: 'for_s' })

    // No for_s of its own: the proposal's hour.
    const ok = await callTool(oc, 'approve_proposal', { id: p.json.id, note: 'one hour' })
    expect(ok.isError).toBe(false)
    expect(ok.json).toMatchObject({ status: 'approved', note: 'one hour', lapses_at: new Date(NOON + 3600_000).toISOString() })
    const listed = await callTool(oc, 'list_agents', {})
    expect(listed.json.agents.find((x: { id: string }) => x.id === agent.id)).toMatchObject({ daily_cap: 3, raised: { daily_cap: { base: 1, until: new Date(NOON + 3600_000).toISOString() } } })

    expect((await callTool(ac, 'test_cheap', { q: 'three' })).isError).toBe(false)
    rig.t.clock.set(NOON + 3600_000)
    expect((await callTool(ac, 'test_cheap', { q: 'four' })).json).toMatchObject({ rule: 'agent_daily_cap', cap: 1 })

    // decline_proposal, for the owner too.
    const q = await callTool(ac, 'propose', { kind: 'allow', value: 'test.echo', reason: 'r' })
    expect((await callTool(oc, 'decline_proposal', { id: q.json.id })).json).toMatchObject({ status: 'declined' })
  })
})
