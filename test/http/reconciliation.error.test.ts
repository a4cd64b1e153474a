/**
 * The reconciliation's founder surfaces refuse what they should, and change nothing when they do
 * (docs/api.md §13d): who may call them, bad days and ranges (400 with `field`), unknown fields, a
 * day not over yet; and a usage API whose answer is not a whole bill (a wrong admin key,
 * pagination that never ends, negative counts) is `unavailable`, never drift.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ADMIN, startBillApp, type BillApp } from '../helpers/reconciliation'
import { startTestApp } from '../helpers/harness'

let b: BillApp
const founder = { token: ADMIN }

beforeAll(async () => {
  b = await startBillApp()
  b.t.clock.set(Date.parse('2026-05-20T12:00:00Z'))
})

afterAll(async () => {
  await b?.t.close()
})

const nothingRan = async () => {
  expect(b.usage.requests).toEqual([])
  expect((await b.t.req('GET', '/admin/reconciliation?from=2025-06-01&to=2026-05-19', founder)).body.days).toEqual([])
}

describe('who may call', () => {
  test('no bearer → 401, an owner token → 403, on both routes', async () => {
    const owner = await b.t.signup()
    for (const [method, path] of [['GET', '/admin/reconciliation'], ['POST', '/admin/reconciliation/run']] as const) {
      expect((await b.t.req(method, path)).status).toBe(401)
      const r = await b.t.req(method, path, { token: owner.token })
      expect(r.status).toBe(403)
      expect(r.body.error).toBe('FORBIDDEN')
    }
    await nothingRan()
  })
})

describe('bad input → 400 with field, nothing run', () => {
  test.each([
    ['from=2026-02-30', 'from'],
    ['from=yesterday', 'from'],
    ['to=2026-5-1', 'to'],
    ['from=2026-05-10&to=2026-05-01', 'from'],
    ['from=2024-01-01&to=2026-05-01', 'from'],
  ])('GET ?%s', async (q, field) => {
    const r = await b.t.req('GET', `/admin/reconciliation?${q}`, founder)
    expect(r.status).toBe(400)
    expect(r.body).toMatchObject({ error: 'BAD_REQUEST', field })
  })

  test.each([
    [{ day: '20260501' }, 'day'],
    [{ day: 20260501 }, 'day'],
    // Today is not over, and yesterday has not settled until an hour past midnight UTC… it has here: the day after is refused.
    [{ day: '2026-05-20' }, 'day'],
    [{ day: '2026-05-19', dry_run: true }, 'dry_run'],
  ])('POST run %j', async (body, field) => {
    const r = await b.t.req('POST', '/admin/reconciliation/run', { ...founder, body })
    expect(r.status).toBe(400)
    expect(r.body).toMatchObject({ error: 'BAD_REQUEST', field })
  })

  test('a control character in the day is refused', async () => {
    const r = await b.t.req('POST', '/admin/reconciliation/run', { ...founder, body: { day: '2026-05-19\u0007' } })
    expect(r.status).toBe(400)
    expect(r.body.error).toBe('BAD_REQUEST')
    await nothingRan()
  })
})

describe('a usage answer that is not a whole bill is unavailable, never drift', () => {
  const runDay = async () => (await b.t.req('POST', '/admin/reconciliation/run', { ...founder, body: { day: '2026-05-19' } })).body

  test('a wrong admin key (401)', async () => {
    const keep = b.usage.adminKeys.openai
    b.usage.adminKeys.openai = 'another-key'
    try {
      const r = await runDay()
      expect(r.runs).toContainEqual({ provider: 'openai', status: 'unavailable', error: 'HTTP 401' })
      expect(r.runs).toContainEqual({ provider: 'anthropic', status: 'ok', error: null })
    } finally {
      b.usage.adminKeys.openai = keep
    }
  })

  test('has_more without a next page, a negative count', async () => {
    const inner = b.t.fake.handler!
    for (const broken of [{ object: 'page', data: [], has_more: true, next_page: null }, { object: 'page', data: [{ object: 'bucket', start_time: Date.parse('2026-05-19T00:00:00Z') / 1000, results: [{ model: 'gpt-test', input_tokens: -5, output_tokens: 1 }] }], has_more: false }]) {
      b.t.fake.handler = (req, seen) => (new URL(req.url).pathname.startsWith('/v1/organization/usage/') ? Response.json(broken) : inner(req, seen))
      try {
        const r = await runDay()
        expect(r.runs.find((x: any) => x.provider === 'openai').status).toBe('unavailable')
        expect((await b.t.req('GET', '/admin/alarms', founder)).body.alarms.filter((a: any) => a.kind === 'reconcile_drift')).toEqual([])
      } finally {
        b.t.fake.handler = inner
      }
    }
  })
})

test('without an admin key no provider is reconciled, and a run does nothing', async () => {
  const t = await startTestApp({ env: { ADMIN_TOKEN: ADMIN } })
  try {
    t.clock.set(Date.parse('2026-05-20T12:00:00Z'))
    expect(t.s.billCheck.providers).toEqual([])
    const r = await t.req('POST', '/admin/reconciliation/run', founder)
    expect(r.body).toEqual({ day: '2026-05-19', runs: [], days: [] })
    expect((await t.req('GET', '/admin/reconciliation', founder)).body).toMatchObject({ from: '2026-04-20', to: '2026-05-19', providers: [], days: [] })
  } finally {
    await t.close()
  }
})
