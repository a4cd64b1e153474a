/**
 * An account's and an agent's hashes are kept hashtables, not listpacks (docs/redis-keys.md, "The
 * layout of the account and agent hashes"): every paid call reads 9 fields of its account's hash and
 * 11–16 of its agent's and each ancestor's, and in a listpack each field is found by a scan of the
 * whole hash (an absent one, the rule for an account or agent without a cap, allowlist or other
 * limit of its own, scans all of it). Created either way, by its script or by the ledger rebuild,
 * the hash carries the field that keeps it so.
 *
 *   bun test test/integration/hash-layout.test.ts
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { hashToken } from '../../src/auth/tokens'
import { restoreMissing } from '../../src/recovery/rebuild'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const encoding = (key: string) => t.redis.object('ENCODING', key)

test('an account is created as a hashtable, and rebuilt as one', async () => {
  const o = await t.signup()
  const key = t.s.ctx.keys.account(o.account_id)
  expect(await encoding(key)).toBe('hashtable')
  await flushAll(t)
  await t.redis.del(key)
  expect((await restoreMissing(t.s.ctx, t.s.db.db)).failed).toEqual([])
  expect(await encoding(key)).toBe('hashtable')
  expect((await t.req('GET', '/v1/balance', { token: o.token })).body.balance).toBe(o.balance)
})

test('an agent and a sub-agent are created as hashtables, and rebuilt as hashtables', async () => {
  const o = await t.signup()
  const root = (await t.req('POST', '/v1/agents', { token: o.token, body: { name: 'root', budget: 100 } })).body
  const child = (await t.req('POST', '/v1/agents', { token: root.token, body: { name: 'child', budget: 10 } })).body
  const { keys } = t.s.ctx
  const hashes = [root, child].map((a) => keys.agent(o.account_id, a.id))
  expect(await Promise.all(hashes.map(encoding))).toEqual(['hashtable', 'hashtable'])
  // The layout is Redis' own business: the agent answers as before, and a call charges the chain.
  expect((await t.req('POST', '/v1/call/test.echo', { token: child.token, body: { q: 'x' } })).status).toBe(200)
  expect(await t.redis.hmget(hashes[0]!, 'spent_total', 'carved')).toEqual(['5', '5'])

  await flushAll(t)
  await t.redis.del(keys.account(o.account_id), keys.agents(o.account_id), ...hashes, ...[root, child].map((a) => keys.token(hashToken(a.token))))
  expect((await restoreMissing(t.s.ctx, t.s.db.db)).failed).toEqual([])
  expect(await Promise.all(hashes.map(encoding))).toEqual(['hashtable', 'hashtable'])
  expect((await t.req('POST', '/v1/call/test.echo', { token: child.token, body: { q: 'x' } })).status).toBe(200)
})
