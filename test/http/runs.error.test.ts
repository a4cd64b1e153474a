/**
 * Run budgets (docs/api.md §13c), the refusals: a malformed `X-Budget-Run`, or one sent with the
 * owner token, is a 400 naming the header, before any debit; nothing moves and no run opens.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { redisBalance } from '../helpers/ledger'
import { parseRunHeader } from '../../src/paid-request/run-header'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const call = (token: string, run: string, slug = 'test.echo') => t.req('POST', `/v1/call/${slug}`, { token, body: { q: 'x' }, headers: { 'X-Budget-Run': run } })
const runs = async (token: string) => (await t.req('GET', '/v1/runs', { token })).body.runs as any[]

const MALFORMED = [
  '',
  '; max=5',
  'job 1; max=5',
  `${'j'.repeat(65)}; max=5`,
  'job/1; max=5',
  'job',
  'job; ttl=60',
  'job; max=-1',
  'job; max=1.5',
  'job; max=',
  'job; max=5; ttl=0',
  'job; max=5; ttl=604801',
  'job; max=5; max=6',
  'job; max=5; cost=1',
  'job; max=5;',
  'job, other; max=5',
  'job; max=5, other; max=5',
  'job; max=1e3',
]

describe('run budgets: refusals', () => {
  test.each(MALFORMED)('malformed %p → 400 naming X-Budget-Run, nothing debited, no run opened', async (value) => {
    const owner = await t.signup()
    const agent = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'w' } })).body
    const seen = t.fake.seen.length
    const r = await call(agent.token, value)
    expect(r.status).toBe(400)
    expect(r.body).toMatchObject({ error: 'BAD_REQUEST', field: 'X-Budget-Run' })
    expect(r.body.message).toContain('X-Budget-Run must be')
    expect(await redisBalance(t, owner.account_id)).toBe(500)
    expect(await runs(owner.token)).toEqual([])
    expect(t.fake.seen.length).toBe(seen)
  })

  test('the owner token with the header → 400: a run is opened by an agent', async () => {
    const owner = await t.signup()
    const r = await call(owner.token, 'job; max=5')
    expect(r.status).toBe(400)
    expect(r.body).toMatchObject({ error: 'BAD_REQUEST', field: 'X-Budget-Run' })
    expect(r.body.expected).toContain('agent token')
    expect(await redisBalance(t, owner.account_id)).toBe(500)
    expect(await runs(owner.token)).toEqual([])
  })

  test('the edges that pass: a 64-character id of every allowed kind, ttl at 7 days, max 0 (only free calls)', async () => {
    const owner = await t.signup()
    const agent = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'w' } })).body
    const id = 'Az09_.:-'.repeat(8)
    const r = await call(agent.token, ` ${id} ;max = 5 ; ttl=604800 `)
    expect(r.status).toBe(200)
    expect(r.body.run).toMatchObject({ id, max: 5, spent: 5 })
    expect(Date.parse(r.body.run.expires_at)).toBe(t.clock.now() + 604_800_000)
    expect((await call(agent.token, 'zero; max=0', 'test.free')).body.run).toMatchObject({ id: 'zero', spent: 0 })
    expect((await call(agent.token, 'zero; max=0')).body).toMatchObject({ rule: 'run_budget', reason: 'exhausted', max: 0, spent: 0 })
  })

  test('the parser: the default TTL is an hour; parameters in any order', () => {
    expect(parseRunHeader('a; max=7')).toEqual({ id: 'a', max: 7, ttlS: 3600 })
    expect(parseRunHeader('a;ttl=9;max=7')).toEqual({ id: 'a', max: 7, ttlS: 9 })
  })
})
