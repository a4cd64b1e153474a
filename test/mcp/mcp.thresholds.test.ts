/**
 * Threshold warnings over MCP (docs/api.md §13a, §10): `set_policies` takes `account.thresholds`
 * as PUT /v1/policies does and its result shows the levels; bad levels are a tool error with the
 * REST body (BAD_REQUEST, `field`) and change nothing; a paid tool call that crosses a level tells
 * the owner as the REST call does.
 */
import { describe, expect, test } from 'bun:test'
import { callTool, mcpRig } from '../helpers/mcp'
import { flushAll } from '../helpers/ledger'

const rig = mcpRig()

describe('thresholds over MCP', () => {
  test('set_policies sets and shows them; a bad level is the REST 400; a crossing call tells the owner', async () => {
    const a = await rig.t.signup()
    const owner = await rig.connect(a.token)
    const set = await callTool(owner, 'set_policies', { account: { daily_cap: 20, thresholds: [75, 25] } })
    expect(set.isError).toBe(false)
    expect(set.json.account).toMatchObject({ daily_cap: 20, thresholds: [25, 75] })
    expect((set.structured as { account: { thresholds: number[] } }).account.thresholds).toEqual([25, 75])
    expect(set.json).toEqual((await rig.t.req('GET', '/v1/policies', { token: a.token })).body)

    const bad = await callTool(owner, 'set_policies', { account: { thresholds: [0, 50] } })
    expect(bad.isError).toBe(true)
    expect(bad.json).toMatchObject({ error: 'BAD_REQUEST', field: 'account.thresholds' })
    expect((await rig.t.req('GET', '/v1/policies', { token: a.token })).body.account.thresholds).toEqual([25, 75])

    // 5 credits of 20 reach 25%.
    const paid = await callTool(owner, 'call_capability', { slug: 'test.echo', params: { q: 'x' } })
    expect(paid.isError).toBe(false)
    await flushAll(rig.t)
    const events = (await rig.t.req('GET', '/v1/events?limit=50', { token: a.token })).body.events as { type: string; data: Record<string, unknown> }[]
    expect(events.filter((e) => e.type === 'cap.threshold').map((e) => e.data)).toEqual([
      expect.objectContaining({ scope: 'account', cap_kind: 'daily_cap', percent: 25, cap: 20, spent: 5, call_id: paid.json.call_id }),
    ])
  })
})
