/**
 * The reconciliation with the providers' bills (docs/api.md §13d), at the HTTP edge: real metered
 * traffic through the proxy on both house lanes (and an owner's lane that must not count), flushed
 * to Postgres, then the fake usage APIs agreeing, disagreeing by 5% on one model, down (no false
 * alarm; retried with backoff), and billing traffic the operator opened unpriced.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { flushAll } from '../helpers/ledger'
import { ADMIN, chat, message, proxied, startBillApp, type BillApp } from '../helpers/reconciliation'
import { vaultKey } from '../helpers/vault'

const DAY = '2026-03-10'
const NEXT = '2026-03-11'
const at = (iso: string) => Date.parse(iso)

let b: BillApp
const founder = { token: ADMIN }

/** What the traffic below puts in our ledger, in the reconciliation's meaning (tokens.ts). */
const OURS = {
  // Three proxied gpt-test calls and one through the metered capability llm.test.chat.
  openai: { 'gpt-test': { input: 4000, cached: 800, output: 1200 }, 'gpt-test-mini': { input: 500, cached: 0, output: 100 } },
  // Anthropic: the cache writes count as input (80 per call).
  anthropic: { 'claude-test': { input: 2 * (800 + 80), cached: 200, output: 100 } },
}
/** The legacy model the opened /v1/completions route used: on the bill, metered by no route of ours. */
const LEGACY = { 'gpt-legacy-instruct': { input: 40, cached: 0, output: 20 } }

const run = (day = DAY) => b.t.req('POST', '/admin/reconciliation/run', { ...founder, body: { day } })
const view = (from = DAY, to = DAY) => b.t.req('GET', `/admin/reconciliation?from=${from}&to=${to}`, founder)
const rowOf = (days: any[], provider: string, model: string | null) => days.find((r) => r.provider === provider && r.model === model)
const driftAlarms = async () => (await b.t.req('GET', '/admin/alarms', founder)).body.alarms.filter((a: any) => a.kind === 'reconcile_drift')
const statusReasons = async () => ((await b.t.req('GET', '/status')).body.degraded as { reason: string }[]).map((r) => r.reason)
const metric = async (line: string) => {
  const text = (await b.t.req('GET', '/metrics')).text
  const found = text.split('\n').find((l) => l.startsWith(line + ' '))
  return found === undefined ? undefined : Number(found.slice(line.length + 1))
}
const agree = () => {
  b.usage.usage.openai = { [DAY]: { ...structuredClone(OURS.openai), ...structuredClone(LEGACY) } }
  b.usage.usage.anthropic = { [DAY]: structuredClone(OURS.anthropic) }
}

beforeAll(async () => {
  b = await startBillApp()
  b.t.clock.set(at(`${DAY}T12:00:00Z`))
  const house = await b.t.signup()
  const owner = await b.t.signup()
  await b.t.req('PUT', '/v1/policies', { token: house.token, body: { account: { daily_cap: 1_000_000 } } })
  await vaultKey(b.t, owner.token, 'sk-owner-openai-0123456789', 'openai')

  b.llm.usage = { input: 1000, cached: 200, output: 300 }
  for (let i = 0; i < 3; i++) expect((await proxied(b.base, house.token, '/openai/v1/chat/completions', chat('gpt-test'))).status).toBe(200)
  const viaCapability = await b.t.req('POST', '/v1/call/llm.test.chat', { token: house.token, body: chat('gpt-test') })
  expect(viaCapability.status).toBe(200)
  // The owner's lane: billed to the owner's own provider account, never counted as ours.
  for (let i = 0; i < 2; i++) expect((await proxied(b.base, owner.token, '/openai/v1/chat/completions', chat('gpt-test'))).status).toBe(200)
  b.llm.usage = { input: 500, cached: 0, output: 100 }
  expect((await proxied(b.base, house.token, '/openai/v1/chat/completions', chat('gpt-test-mini'))).status).toBe(200)
  b.llm.usage = { input: 800, cached: 100, output: 50, cache_write: 80 }
  for (let i = 0; i < 2; i++) expect((await proxied(b.base, house.token, '/anthropic/v1/messages', message('claude-test'))).status).toBe(200)
  // The operator's opening: house traffic on a route we do not meter.
  for (let i = 0; i < 2; i++) expect((await proxied(b.base, house.token, '/openai/v1/completions', { model: 'gpt-legacy-instruct', prompt: 'hi' })).status).toBe(200)
  await flushAll(b.t)
  // An hour past the day's end: the day is due.
  b.t.clock.set(at(`${NEXT}T01:30:00Z`))
})

afterAll(async () => {
  await b?.t.close()
})

describe('a usage API that agrees', () => {
  test('every model is ok, the view shows ours, theirs and the difference, and no alarm is raised', async () => {
    agree()
    const r = await run()
    expect(r.status).toBe(200)
    expect(r.body.runs).toEqual([
      { provider: 'anthropic', status: 'ok', error: null },
      { provider: 'openai', status: 'ok', error: null },
    ])
    const v = await view()
    expect(v.status).toBe(200)
    expect(v.body.providers).toEqual(['anthropic', 'openai'])
    expect(v.body.threshold_pct).toBe(2)
    for (const [provider, models] of Object.entries(OURS))
      for (const [model, tokens] of Object.entries(models)) {
        const row = rowOf(v.body.days, provider, model)
        expect(row).toMatchObject({ day: DAY, ours: tokens, theirs: tokens, difference: { input: 0, cached: 0, output: 0 }, drift_pct: 0, status: 'ok' })
      }
    // The owner's lane is not in ours: exactly the house lane's four gpt-test calls.
    expect(rowOf(v.body.days, 'openai', 'gpt-test').ours.input).toBe(4000)
    expect(await driftAlarms()).toEqual([])
    expect((await statusReasons()).filter((r) => r.startsWith('reconcile_drift'))).toEqual([])
    expect(await metric('pab_reconcile_drift{provider="openai"}')).toBe(0)
  })

  test('the usage APIs were asked with the admin keys, for the day, by model, page after page', async () => {
    const openai = b.usage.requests.filter((r) => r.path.startsWith('/v1/organization/usage/completions'))
    expect(openai.length).toBeGreaterThanOrEqual(3) // three models: three pages
    expect(openai.every((r) => r.headers.authorization === `Bearer ${b.usage.adminKeys.openai}`)).toBe(true)
    const first = new URL(`http://x${openai[0]!.path}`).searchParams
    expect(first.get('start_time')).toBe(String(at(`${DAY}T00:00:00Z`) / 1000))
    expect(first.get('bucket_width')).toBe('1d')
    expect(first.getAll('group_by')).toEqual(['model'])
    const anthropic = b.usage.requests.filter((r) => r.path.startsWith('/v1/organizations/usage_report/messages'))
    expect(anthropic.length).toBeGreaterThanOrEqual(1)
    expect(anthropic[0]!.headers['x-api-key']).toBe(b.usage.adminKeys.anthropic)
    expect(anthropic[0]!.headers['anthropic-version']).toBe('2023-06-01')
    expect(new URL(`http://x${anthropic[0]!.path}`).searchParams.get('starting_at')).toBe(`${DAY}T00:00:00.000Z`)
  })
})

describe('opened unpriced traffic', () => {
  test('a model only the opened route used is named unmetered, with the requests, and is not drift', async () => {
    const v = await view()
    const row = rowOf(v.body.days, 'openai', 'gpt-legacy-instruct')
    expect(row).toMatchObject({ status: 'unmetered', ours: { input: 0, cached: 0, output: 0 }, theirs: LEGACY['gpt-legacy-instruct'], unmetered_requests: 2 })
    expect(await driftAlarms()).toEqual([])
  })

  test('the same model on the bill of a day without opened traffic is drift', async () => {
    b.usage.usage.openai[NEXT] = structuredClone(LEGACY)
    b.t.clock.set(at('2026-03-12T02:00:00Z'))
    try {
      const r = await run(NEXT)
      expect(r.body.runs.find((x: any) => x.provider === 'openai').status).toBe('drift')
      expect(rowOf(r.body.days, 'openai', 'gpt-legacy-instruct')).toMatchObject({ status: 'drift', drift_pct: 100, unmetered_requests: 0 })
      // Cleared for the next tests: the day re-run with a bill that has nothing on it.
      delete b.usage.usage.openai[NEXT]
      expect((await run(NEXT)).body.runs.every((x: any) => x.status === 'ok')).toBe(true)
      expect(await driftAlarms()).toEqual([])
    } finally {
      b.t.clock.set(at(`${NEXT}T01:30:00Z`))
    }
  })
})

describe('a usage API that disagrees by 5% on one model', () => {
  test('that model is drift with both figures; the alarm is in /admin/alarms, /status and the metric', async () => {
    agree()
    // The bill shows 5% more input than we metered for gpt-test.
    b.usage.usage.openai[DAY]!['gpt-test']!.input = Math.round(4000 / 0.95)
    const runsBefore = (await metric('pab_reconcile_runs_total{provider="openai",status="drift"}')) ?? 0
    const r = await run()
    expect(r.body.runs).toContainEqual({ provider: 'openai', status: 'drift', error: null })
    expect(r.body.runs).toContainEqual({ provider: 'anthropic', status: 'ok', error: null })
    const row = rowOf(r.body.days, 'openai', 'gpt-test')
    expect(row).toMatchObject({ status: 'drift', ours: OURS.openai['gpt-test'], theirs: { input: 4211, cached: 800, output: 1200 }, difference: { input: 211, cached: 0, output: 0 }, drift_pct: 5.01 })
    expect(rowOf(r.body.days, 'openai', 'gpt-test-mini').status).toBe('ok')

    const alarms = await driftAlarms()
    expect(alarms).toHaveLength(1)
    expect(alarms[0]).toMatchObject({
      kind: 'reconcile_drift',
      reason: 'reconcile_drift:openai',
      provider: 'openai',
      day: DAY,
      threshold_pct: 2,
      models: [{ day: DAY, model: 'gpt-test', ours: OURS.openai['gpt-test'], theirs: { input: 4211, cached: 800, output: 1200 }, drift_pct: 5.01 }],
    })
    const status = (await b.t.req('GET', '/status')).body
    expect(status.status).toBe('degraded')
    const reason = status.degraded.find((d: any) => d.reason === 'reconcile_drift:openai')
    expect(reason.detail).toContain(DAY)
    expect(reason.detail).toContain('5.01%')
    // /status is public: the percent and the day, not the token counts.
    expect(reason.detail).not.toContain('4211')
    expect(await metric('pab_reconcile_drift{provider="openai"}')).toBe(1)
    expect(await metric('pab_reconcile_drift{provider="anthropic"}')).toBe(0)
    expect(await metric('pab_reconcile_runs_total{provider="openai",status="drift"}')).toBe(runsBefore + 1)
  })

  test('a re-run of the day that agrees clears the alarm, and the view keeps one answer per model', async () => {
    agree()
    expect((await run()).body.runs.every((x: any) => x.status === 'ok')).toBe(true)
    expect(await driftAlarms()).toEqual([])
    expect((await statusReasons()).includes('reconcile_drift:openai')).toBe(false)
    const v = await view()
    expect(v.body.days.filter((r: any) => r.provider === 'openai' && r.model === 'gpt-test')).toHaveLength(1)
  })
})

describe('a usage API that is down', () => {
  test('503 and 429: unavailable, our figures kept, no alarm', async () => {
    for (const code of [503, 429]) {
      agree()
      b.usage.down = code
      const r = await run()
      expect(r.body.runs).toEqual([
        { provider: 'anthropic', status: 'unavailable', error: `HTTP ${code}` },
        { provider: 'openai', status: 'unavailable', error: `HTTP ${code}` },
      ])
      const row = rowOf(r.body.days, 'openai', 'gpt-test')
      expect(row).toMatchObject({ status: 'unavailable', ours: OURS.openai['gpt-test'], theirs: null, difference: null, drift_pct: null, error: `HTTP ${code}` })
      expect(await driftAlarms()).toEqual([])
      expect((await statusReasons()).filter((x) => x.startsWith('reconcile_drift'))).toEqual([])
    }
    b.usage.down = null
    // Answered again, the day is whole once more.
    expect((await run()).body.runs.every((x: any) => x.status === 'ok')).toBe(true)
  })

  test('the daily job runs the due day once, retries an unavailable one with backoff, and settles when it answers', async () => {
    const due = '2026-03-13'
    const dayStartS = String(at(`${due}T00:00:00Z`) / 1000)
    /** Usage requests for `due` (other days' retries run in the same ticks). */
    const asked = () => b.usage.requests.filter((r) => r.path.includes(`start_time=${dayStartS}`) || r.path.includes(`starting_at=${encodeURIComponent(`${due}T00:00:00.000Z`)}`)).length
    // Tokens on the bill that day and none in our ledger: drift, once the API answers.
    b.usage.usage.openai[due] = { 'gpt-test': { input: 10, cached: 0, output: 5 } }
    b.usage.down = 503
    // Half an hour past the day's end it is not due yet.
    b.t.clock.set(at('2026-03-14T00:30:00Z'))
    expect(await b.t.s.billCheck.tick()).toBe(true)
    expect(asked()).toBe(0)
    expect((await view(due, due)).body.days).toEqual([])
    // Past the hour: the day runs, finds the API down, and waits 5 minutes.
    b.t.clock.set(at('2026-03-14T01:30:00Z'))
    await b.t.s.billCheck.tick()
    expect(asked()).toBe(2) // anthropic's report, openai's completions (refused at the first)
    expect((await view(due, due)).body.days.map((r: any) => r.status)).toEqual(['unavailable', 'unavailable'])
    await b.t.s.billCheck.tick()
    expect(asked()).toBe(2) // neither due again nor retried yet
    b.t.clock.advance(5 * 60_000)
    await b.t.s.billCheck.tick()
    expect(asked()).toBe(4) // the first retry
    // The second retry waits 10 minutes.
    b.t.clock.advance(9 * 60_000)
    await b.t.s.billCheck.tick()
    expect(asked()).toBe(4)
    b.usage.down = null
    b.t.clock.advance(60_000)
    await b.t.s.billCheck.tick()
    expect(asked()).toBeGreaterThan(4)
    const days = (await view(due, due)).body.days
    expect(days.map((r: any) => [r.provider, r.model, r.status])).toEqual([
      ['anthropic', null, 'ok'],
      ['openai', 'gpt-test', 'drift'],
    ])
    expect(days[0].error).toBeNull()
    // An answered day is not asked again, not even when the next day runs.
    const n = asked()
    b.t.clock.set(at('2026-03-15T01:30:00Z'))
    await b.t.s.billCheck.tick()
    expect(asked()).toBe(n)
    expect((await view('2026-03-14', '2026-03-14')).body.days.map((r: any) => r.status)).toEqual(['ok', 'ok'])
    // Clear the drift of the day above for whoever reads the alarms after.
    b.usage.usage.openai[due] = {}
    expect((await run(due)).body.runs.every((x: any) => x.status === 'ok')).toBe(true)
  })
})
