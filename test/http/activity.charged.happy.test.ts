/**
 * One meaning of `charged` wherever a call is shown (docs/api.md §5, §7): what the call cost in the
 * end — 0 for a refunded call — with `reserved` (what its debit took when it started) beside it.
 * The list said `charged: 5, refunded: true` while the call's own record said `charged: 0`. The
 * list (REST, MCP get_activity, the console's Activity page) and GET /v1/activity/{call_id} agree,
 * whether the call is read from Redis' recent calls or from Postgres.
 */
import { describe, expect, test } from 'bun:test'
import { ConsoleClient } from '../helpers/console'
import { flushAll } from '../helpers/ledger'
import { callTool, mcpRig } from '../helpers/mcp'

const rig = mcpRig()

type Row = { call_id: string; slug: string; charged: number; reserved: number; refunded: boolean }

async function twoCalls() {
  const a = await rig.t.signup()
  const failed = await rig.t.req('POST', '/v1/call/test.fail', { token: a.token, body: {} })
  expect(failed.body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true })
  const ok = await rig.t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'x' } })
  expect(ok.body.charged).toBe(5)
  return { a, refundedId: failed.body.call_id as string, okId: ok.body.call_id as string }
}

async function expectOneMeaning(token: string, refundedId: string, okId: string) {
  const list = (await rig.t.req('GET', '/v1/activity', { token })).body.calls as Row[]
  const byId = new Map(list.map((r) => [r.call_id, r]))
  expect(byId.get(refundedId)).toMatchObject({ slug: 'test.fail', refunded: true, charged: 0, reserved: 5 })
  expect(byId.get(okId)).toMatchObject({ slug: 'test.echo', refunded: false, charged: 5, reserved: 5 })
  for (const id of [refundedId, okId]) {
    const detail = (await rig.t.req('GET', `/v1/activity/${id}`, { token })).body
    expect({ charged: detail.charged, reserved: detail.reserved }).toEqual({ charged: byId.get(id)!.charged, reserved: byId.get(id)!.reserved })
  }
  const viaMcp = (await callTool(await rig.connect(token), 'get_activity', {})).json.calls as Row[]
  expect(viaMcp).toEqual(list)
}

describe('charged: what the call cost in the end', () => {
  test('a refunded call reads charged 0 (reserved 5) in the list, in its own record and over MCP; a kept one 5 and 5', async () => {
    const { a, refundedId, okId } = await twoCalls()
    await expectOneMeaning(a.token, refundedId, okId)
  })

  test('the same once the calls are read from Postgres (flushed, gone from the recent list)', async () => {
    const { a, refundedId, okId } = await twoCalls()
    await flushAll(rig.t)
    await rig.t.redis.del(rig.t.s.ctx.keys.recentCalls(a.account_id))
    await expectOneMeaning(a.token, refundedId, okId)
  })

  test("the console's Activity page shows the refunded call's charge as 0", async () => {
    const { a } = await twoCalls()
    const c = new ConsoleClient(rig.t)
    await c.signIn(a.token)
    const page = (await c.get('/console/activity')).text
    const row = (slug: string) => page.split('<tr>').find((r) => r.includes(`<code>${slug}</code>`))!
    expect(row('test.fail')).toContain('(refunded)')
    expect(row('test.fail')).toMatch(/<td class="num">0<\/td><td class="num">500<\/td>/)
    expect(row('test.echo')).toMatch(/<td class="num">5<\/td><td class="num">200<\/td>/)
  })
})
