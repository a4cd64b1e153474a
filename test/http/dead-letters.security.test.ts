/**
 * Dead letters hold other accounts' entries (emails, call records): only the founder
 * (`Bearer $ADMIN_TOKEN`) lists, replays or discards them; an account's own token is FORBIDDEN and
 * changes nothing.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'

const ADMIN = 'founder-secret-0123456789abcdef'
let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { ADMIN_TOKEN: ADMIN } })
})
afterAll(async () => {
  await t.close()
})

test("an account's token, an agent's or none never reaches the dead letters", async () => {
  const victim = await t.signup()
  const shard = t.s.ctx.keys.shardOf(victim.account_id)
  // A poison entry carrying the victim's data, dead-lettered by the flusher.
  await t.redis.xadd(t.s.ctx.keys.outbox(shard), '*', 'kind', 'account', 'id', 'acc_poison:account', 'acct', victim.account_id, 'email', 'secret\u0000@example.com', 'public_ref', 'ref_poison', 'origin', '', 'referrer', '', 'owner', 'x', 'at', String(Date.now()))
  await flushAll(t)
  const founderView = await t.req('GET', '/admin/dead-letters', { token: ADMIN })
  expect(founderView.body.count).toBe(1)
  const id = founderView.body.dead_letters[0].id as string

  const other = await t.signup()
  const agent = (await t.req('POST', '/v1/agents', { token: other.token, body: { name: 'a' } })).body.token as string
  const surfaces: [string, string][] = [
    ['GET', '/admin/dead-letters'],
    ['POST', `/admin/dead-letters/${id}/replay`],
    ['DELETE', `/admin/dead-letters/${id}`],
  ]
  for (const [method, path] of surfaces) {
    for (const token of [victim.token, other.token, agent]) {
      const r = await t.req(method, path, { token })
      expect([path, r.status, r.body.error]).toEqual([path, 403, 'FORBIDDEN'])
      expect(r.text).not.toContain('secret')
    }
    for (const token of [undefined, ADMIN.slice(0, -1)]) {
      const r = await t.req(method, path, { token })
      expect([path, r.status, r.body.error]).toEqual([path, 401, 'UNAUTHORIZED'])
      expect(r.text).not.toContain('secret')
    }
  }
  // Nothing was replayed or discarded on their behalf.
  expect((await t.req('GET', '/admin/dead-letters', { token: ADMIN })).body.dead_letters.map((d: { id: string }) => d.id)).toEqual([id])
  // A malformed or unknown id is NOT_FOUND for the founder too, never a Redis error.
  expect((await t.req('POST', '/admin/dead-letters/dl_99_1-0/replay', { token: ADMIN })).status).toBe(404)
  expect((await t.req('DELETE', '/admin/dead-letters/dl_03_1-0', { token: ADMIN })).status).toBe(404)
  expect((await t.req('DELETE', '/admin/dead-letters/nope', { token: ADMIN })).status).toBe(400)
})
