/**
 * GET /metrics (Prometheus text). The money counters move when the flusher commits (once per entry
 * across instances); the outbox gauges are read on scrape.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { drain } from '../helpers/invariants'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: '5' } })
  t.clock.set(Math.ceil(Date.now() / 60_000) * 60_000 + 1_000)
})
afterAll(async () => {
  await t.close()
})

/** The value of one sample line (`name{labels} value`), or 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`)
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue
    const labelPart = line.slice(name.length).split(' ')[0]!
    if (want.every((l) => labelPart.includes(l))) return Number(line.split(' ').at(-1))
  }
  return 0
}

const scrape = async () => {
  const r = await t.req('GET', '/metrics')
  expect(r.status).toBe(200)
  expect(r.headers.get('content-type')).toContain('text/plain')
  return r.text
}

describe('GET /metrics', () => {
  test('requests by route template and status; money counters after the flush; outbox lag on scrape', async () => {
    const before = await scrape()
    const a = await t.signup()
    expect((await t.req('POST', '/v1/call/test.echo', { token: a.token, body: {} })).status).toBe(200)
    expect((await t.req('POST', '/v1/call/test.fail', { token: a.token, body: {} })).status).toBe(502)
    await Bun.sleep(20) // the call records are filed just after the answers
    const pending = await scrape()
    expect(sample(pending, 'pab_http_requests_total', { method: 'POST', route: '/v1/call/:slug', status: '200' })).toBe(
      sample(before, 'pab_http_requests_total', { method: 'POST', route: '/v1/call/:slug', status: '200' }) + 1,
    )
    expect(sample(pending, 'pab_http_requests_total', { route: '/v1/call/:slug', status: '502' })).toBeGreaterThanOrEqual(1)
    expect(sample(pending, 'pab_api_errors_total', { code: 'PROVIDER_ERROR' })).toBeGreaterThanOrEqual(1)
    expect(sample(pending, 'pab_outbox_entries')).toBeGreaterThan(0)

    await drain(t.s.flusher)
    const after = await scrape()
    expect(sample(after, 'pab_outbox_entries')).toBe(0)
    expect(sample(after, 'pab_debits_total') - sample(before, 'pab_debits_total')).toBe(2)
    expect(sample(after, 'pab_refunds_total') - sample(before, 'pab_refunds_total')).toBe(1)
    expect(sample(after, 'pab_credits_honored_total') - sample(before, 'pab_credits_honored_total')).toBe(5)
    expect(sample(after, 'pab_organic_calls_total') - sample(before, 'pab_organic_calls_total')).toBe(1)
    expect(sample(after, 'pab_ledger_entries_total', { kind: 'grant' }) - sample(before, 'pab_ledger_entries_total', { kind: 'grant' })).toBe(1)
    expect(sample(after, 'pab_flush_latency_seconds_count')).toBeGreaterThanOrEqual(5)
    expect(after).toContain('pab_proxy_bytes_total')
    expect(after).toContain('pab_flush_failures_total')
  })

  test('every refusal counts in pab_api_errors_total: before routing, by validation and by a page', async () => {
    const before = await scrape()
    const count = (text: string, code: string) => sample(text, 'pab_api_errors_total', { code })
    // Refused before any route runs: an unknown proxy provider, and a declared body over the limit.
    expect((await t.req('POST', '/proxy/nope/v1/chat/completions', { body: {} })).body).toMatchObject({ error: 'PROXY_UNKNOWN_PROVIDER' })
    const pad = { email: 'x@example.com', pad: 'x'.repeat(1_100_000) }
    const big = await t.req('POST', '/v1/signup', { body: pad, headers: { 'content-length': String(JSON.stringify(pad).length) } })
    expect(big.status).toBe(413)
    // A TypeBox validation failure, and an unknown route.
    expect((await t.req('POST', '/v1/signup', { body: { email: 42 } })).body).toMatchObject({ error: 'BAD_REQUEST' })
    expect((await t.req('GET', '/v1/nowhere')).body).toMatchObject({ error: 'NOT_FOUND' })
    // A page that renders its own error (the vault link page, asked for JSON, on a deployment without a vault key).
    expect((await t.req('GET', '/vault/nolink', { headers: { accept: 'application/json' } })).body).toMatchObject({ error: 'NOT_CONFIGURED' })
    const after = await scrape()
    expect(count(after, 'PROXY_UNKNOWN_PROVIDER') - count(before, 'PROXY_UNKNOWN_PROVIDER')).toBe(1)
    expect(count(after, 'BAD_REQUEST') - count(before, 'BAD_REQUEST')).toBe(2)
    expect(count(after, 'NOT_FOUND') - count(before, 'NOT_FOUND')).toBe(1)
    expect(count(after, 'NOT_CONFIGURED') - count(before, 'NOT_CONFIGURED')).toBe(1)
  })

  test('rate-limit rejections are counted by route', async () => {
    const before = sample(await scrape(), 'pab_rate_limit_rejections_total', { route: '/v1/balance' })
    const a = await t.signup()
    for (let i = 0; i < 5; i++) await t.req('GET', '/v1/balance', { token: a.token })
    expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(429)
    expect(sample(await scrape(), 'pab_rate_limit_rejections_total', { route: '/v1/balance' })).toBe(before + 1)
  })

  test('the request duration histogram: each answer in its bucket, its count, its sum; every status of a route in one series', async () => {
    const route = { method: 'POST', route: '/v1/call/:slug' }
    const name = 'pab_http_request_duration_seconds'
    const read = (text: string) => ({
      count: sample(text, `${name}_count`, route),
      sum: sample(text, `${name}_sum`, route),
      inf: sample(text, `${name}_bucket`, { ...route, le: '+Inf' }),
      tenSeconds: sample(text, `${name}_bucket`, { ...route, le: '10' }),
    })
    const before = read(await scrape())
    const a = await t.signup()
    expect((await t.req('POST', '/v1/call/test.echo', { token: a.token, body: {} })).status).toBe(200)
    expect((await t.req('POST', '/v1/call/test.fail', { token: a.token, body: {} })).status).toBe(502)
    const mid = read(await scrape())
    expect(mid.count).toBe(before.count + 2)
    expect(mid.inf).toBe(before.inf + 2)
    expect(mid.tenSeconds).toBe(before.tenSeconds + 2)
    expect(mid.sum).toBeGreaterThan(before.sum)
    // Scraped again with nothing answered in between: nothing counted twice.
    expect(read(await scrape())).toEqual(mid)
    const text = await scrape()
    expect(text.split('\n').filter((l) => l.startsWith(`${name}_count{`) && l.includes('route="/v1/call/:slug"'))).toHaveLength(1)
  })

  test('the flush latency histogram: every committed entry in a bucket, its count and its sum', async () => {
    const name = 'pab_flush_latency_seconds'
    const read = (text: string) => ({
      count: sample(text, `${name}_count`),
      sum: sample(text, `${name}_sum`),
      inf: sample(text, `${name}_bucket`, { le: '+Inf' }),
      within300: sample(text, `${name}_bucket`, { le: '300' }),
    })
    await drain(t.s.flusher)
    const before = read(await scrape())
    const a = await t.signup()
    expect((await t.req('POST', '/v1/call/test.echo', { token: a.token, body: {} })).status).toBe(200)
    expect((await t.req('POST', '/v1/call/test.fail', { token: a.token, body: {} })).status).toBe(502)
    await Bun.sleep(20)
    await drain(t.s.flusher)
    const after = read(await scrape())
    // At least the grant, two debits, a refund and two call records.
    expect(after.count - before.count).toBeGreaterThanOrEqual(6)
    expect(after.inf - before.inf).toBe(after.count - before.count)
    expect(after.within300 - before.within300).toBe(after.count - before.count)
    expect(after.sum).toBeGreaterThan(before.sum)
  })
})
