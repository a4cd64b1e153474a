import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'

const ADMIN = 'founder-secret-0123456789abcdef'
let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { ADMIN_TOKEN: ADMIN } })
})
afterAll(async () => {
  await t.close()
})

const path = (url: string) => new URL(url).pathname

describe('support problems', () => {
  test('file → 201 {id, status: open, status_url}; the status_url answers the problem', async () => {
    const a = await t.signup()
    const r = await t.req('POST', '/v1/support', {
      token: a.token,
      body: { category: 'provider', slug: 'test.fail', call_id: 'call_abc', error_code: 'PROVIDER_ERROR', http_status: 502, summary: 'test.fail keeps answering 502' },
    })
    expect(r.status).toBe(201)
    expect(r.body).toEqual({ id: expect.stringMatching(/^sup_/), status: 'open', status_url: `http://pab.test/v1/support/${r.body.id}` })
    const got = await t.req('GET', path(r.body.status_url), { token: a.token })
    expect(got.status).toBe(200)
    expect(got.body).toEqual({
      id: r.body.id,
      status: 'open',
      category: 'provider',
      slug: 'test.fail',
      call_id: 'call_abc',
      error_code: 'PROVIDER_ERROR',
      http_status: 502,
      summary: 'test.fail keeps answering 502',
      created_at: new Date(t.clock.now()).toISOString(),
      updates: [],
    })
  })

  test('an agent token may file, and the whole account (owner or agent) reads it; minimal body', async () => {
    const a = await t.signup()
    const agent = (await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'reporter' } })).body
    const r = await t.req('POST', '/v1/support', { token: agent.token, body: { category: 'other', summary: 'x'.repeat(280) } })
    expect(r.status).toBe(201)
    expect((await t.req('GET', `/v1/support/${r.body.id}`, { token: a.token })).body).toMatchObject({ category: 'other', slug: null, call_id: null })
    expect((await t.req('GET', `/v1/support/${r.body.id}`, { token: agent.token })).status).toBe(200)
  })

  test('the founder moves it open → acknowledged → resolved, with notes; the account sees each update', async () => {
    const a = await t.signup()
    const { id } = (await t.req('POST', '/v1/support', { token: a.token, body: { category: 'billing', summary: 'double charge?' } })).body
    const ack = await t.req('PATCH', `/admin/support/${id}`, { token: ADMIN, body: { status: 'acknowledged', note: 'looking into it' } })
    expect(ack.status).toBe(200)
    expect(ack.body).toMatchObject({ id, status: 'acknowledged', updates: [{ status: 'acknowledged', note: 'looking into it' }] })
    t.clock.advance(60_000)
    const noteOnly = await t.req('PATCH', `/admin/support/${id}`, { token: ADMIN, body: { note: 'found it: a refund is on its way' } })
    expect(noteOnly.body.status).toBe('acknowledged')
    const done = await t.req('PATCH', `/admin/support/${id}`, { token: ADMIN, body: { status: 'resolved' } })
    expect(done.body.status).toBe('resolved')

    const seen = await t.req('GET', `/v1/support/${id}`, { token: a.token })
    expect(seen.body.status).toBe('resolved')
    expect(seen.body.updates.map((u: { status: string; note: string | null }) => [u.status, u.note])).toEqual([
      ['acknowledged', 'looking into it'],
      ['acknowledged', 'found it: a refund is on its way'],
      ['resolved', null],
    ])
    expect(seen.body.updates[1].at).toBe(new Date(t.clock.now()).toISOString())
  })

  test('open → resolved directly is a forward move too', async () => {
    const a = await t.signup()
    const { id } = (await t.req('POST', '/v1/support', { token: a.token, body: { category: 'bug', summary: 'typo in /errors.md' } })).body
    expect((await t.req('PATCH', `/admin/support/${id}`, { token: ADMIN, body: { status: 'resolved', note: 'fixed' } })).body.status).toBe('resolved')
  })
})
