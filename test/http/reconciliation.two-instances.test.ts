/**
 * Two service instances of one deployment (one Redis prefix, one database) look for the due day at
 * the same moment: one runs it (the Redis lock), the other stands aside, and the usage APIs are read
 * once — and the founder's run on either instance while one runs is refused with CONFLICT, not run
 * twice (docs/api.md §13d).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ManualClock } from '../../src/clock'
import { ADMIN, startBillApp, type BillApp } from '../helpers/reconciliation'

let a: BillApp
let b: BillApp
const clock = new ManualClock(Date.parse('2026-04-02T03:00:00Z'))

beforeAll(async () => {
  a = await startBillApp({ clock })
  b = await startBillApp({ clock, database: a.t.db, prefix: a.t.prefix })
})

afterAll(async () => {
  await b?.t.close()
  await a?.t.close()
})

/** Both fakes answer slowly, so the two looks overlap. */
function slow(x: BillApp, log: string[]) {
  const inner = x.t.fake.handler!
  x.t.fake.handler = async (req, seen) => {
    log.push(new URL(req.url).pathname)
    await Bun.sleep(150)
    return inner(req, seen)
  }
}

test('one instance runs the due day; the other stands aside; the APIs are read once', async () => {
  const seen: string[] = []
  slow(a, seen)
  slow(b, seen)
  for (const x of [a, b]) x.usage.usage.openai['2026-04-01'] = { 'gpt-test': { input: 10, cached: 0, output: 1 } }
  const [ra, rb] = await Promise.all([a.t.s.billCheck.tick(), b.t.s.billCheck.tick()])
  expect([ra, rb].sort()).toEqual([false, true])
  // anthropic's report once; openai's completions and embeddings once each.
  expect(seen.sort()).toEqual(['/v1/organization/usage/completions', '/v1/organization/usage/embeddings', '/v1/organizations/usage_report/messages'])
  const view = await a.t.req('GET', '/admin/reconciliation?from=2026-04-01&to=2026-04-01', { token: ADMIN })
  expect(view.body.days.map((r: any) => [r.provider, r.model, r.status])).toEqual([
    ['anthropic', null, 'ok'],
    ['openai', 'gpt-test', 'drift'],
  ])
  // The other instance sees the same alarm: it is read from Postgres, not from the runner's memory.
  const alarms = (await b.t.req('GET', '/admin/alarms', { token: ADMIN })).body.alarms.filter((x: any) => x.kind === 'reconcile_drift')
  expect(alarms.map((x: any) => x.reason)).toEqual(['reconcile_drift:openai'])
  // The lock is let go: the next look runs again (nothing due: nothing asked).
  expect(await a.t.s.billCheck.tick()).toBe(true)
  expect(seen).toHaveLength(3)
})

test("the founder's run while the other instance runs answers CONFLICT, and runs nothing", async () => {
  const seen: string[] = []
  slow(a, seen)
  const running = a.t.req('POST', '/admin/reconciliation/run', { token: ADMIN, body: { day: '2026-03-31' } })
  await Bun.sleep(50)
  const second = await b.t.req('POST', '/admin/reconciliation/run', { token: ADMIN, body: { day: '2026-03-31' } })
  expect(second.status).toBe(409)
  expect(second.body.error).toBe('CONFLICT')
  expect((await running).status).toBe(200)
  expect(seen.filter((p) => p.endsWith('/messages'))).toHaveLength(1)
})
