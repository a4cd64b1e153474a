import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { eq } from 'drizzle-orm'
import { events } from '../../src/db/schema'

const ADMIN = 'founder-secret-0123456789abcdef'
let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { ADMIN_TOKEN: ADMIN } })
})
afterAll(async () => {
  await t.close()
})

describe('support problem errors', () => {
  test('metadata only: unknown fields, a long summary, a bad category → BAD_REQUEST naming the field', async () => {
    const a = await t.signup()
    const cases: [unknown, string][] = [
      [{ category: 'bug', summary: 'x', payload: { prompt: 'secret' } }, 'payload'],
      [{ category: 'bug', summary: 'x', api_key: 'sk-live-123' }, 'api_key'],
      [{ category: 'bug', summary: 'x'.repeat(281) }, 'summary'],
      [{ category: 'bug', summary: '' }, 'summary'],
      [{ category: 'bug' }, 'summary'],
      [{ category: 'complaint', summary: 'x' }, 'category'],
      [{ summary: 'x' }, 'category'],
      [{ category: 'bug', summary: 'x', http_status: 42 }, 'http_status'],
      [{ category: 'bug', summary: 'x', error_code: 'not a code' }, 'error_code'],
    ]
    for (const [body, field] of cases) {
      const r = await t.req('POST', '/v1/support', { token: a.token, body })
      expect([JSON.stringify(body).slice(0, 60), r.status, r.body.error, r.body.field]).toEqual([JSON.stringify(body).slice(0, 60), 400, 'BAD_REQUEST', field])
    }
    expect((await t.req('POST', '/v1/support', { token: a.token, body: { category: 'bug', summary: 'x' } })).status).toBe(201)
  })

  test("another account's problem, or an unknown id → NOT_FOUND", async () => {
    const a = await t.signup()
    const b = await t.signup()
    const { id } = (await t.req('POST', '/v1/support', { token: a.token, body: { category: 'abuse', summary: 'x' } })).body
    for (const [token, pid] of [
      [b.token, id],
      [a.token, 'sup_doesnotexist'],
    ]) {
      const r = await t.req('GET', `/v1/support/${pid}`, { token })
      expect([r.status, r.body.error]).toEqual([404, 'NOT_FOUND'])
    }
    expect((await t.req('PATCH', '/admin/support/sup_doesnotexist', { token: ADMIN, body: { note: 'x' } })).status).toBe(404)
  })

  test('no bearer → UNAUTHORIZED', async () => {
    expect((await t.req('POST', '/v1/support', { body: { category: 'bug', summary: 'x' } })).status).toBe(401)
    expect((await t.req('GET', '/v1/support/sup_x')).status).toBe(401)
  })

  test('states only move forward: backwards or an empty repeat → CONFLICT; a bad status → BAD_REQUEST', async () => {
    const a = await t.signup()
    const { id } = (await t.req('POST', '/v1/support', { token: a.token, body: { category: 'bug', summary: 'x' } })).body
    const patch = (body: unknown) => t.req('PATCH', `/admin/support/${id}`, { token: ADMIN, body })
    expect((await patch({ status: 'open' })).body).toMatchObject({ error: 'CONFLICT' })
    expect((await patch({ status: 'acknowledged' })).status).toBe(200)
    expect((await patch({ status: 'acknowledged' })).status).toBe(409)
    expect((await patch({ status: 'open', note: 'reopen' })).status).toBe(409)
    expect((await patch({ status: 'resolved' })).status).toBe(200)
    expect((await patch({ status: 'acknowledged' })).body.reason).toContain('forward')
    for (const body of [{}, { status: 'closed' }, { note: '' }, { status: 'resolved', extra: 1 }])
      expect([JSON.stringify(body), (await patch(body)).status]).toEqual([JSON.stringify(body), 400])
    const final = await t.req('GET', `/v1/support/${id}`, { token: a.token })
    expect(final.body.status).toBe('resolved')
    expect(final.body.updates).toHaveLength(2)
  })

  test('a retried PATCH (the same status and note as the last update) adds no second update and no second event', async () => {
    const a = await t.signup()
    const { id } = (await t.req('POST', '/v1/support', { token: a.token, body: { category: 'bug', summary: 'retried' } })).body
    const body = { status: 'acknowledged', note: 'looking into it' }
    expect((await t.req('PATCH', `/admin/support/${id}`, { token: ADMIN, body })).status).toBe(200)
    // The founder's client lost the reply and sends it again.
    const again = await t.req('PATCH', `/admin/support/${id}`, { token: ADMIN, body })
    expect(again.status).toBe(409)
    expect(again.body.reason).toContain('already')
    expect((await t.req('PATCH', `/admin/support/${id}`, { token: ADMIN, body: { note: 'looking into it' } })).status).toBe(409)
    const view = await t.req('GET', `/v1/support/${id}`, { token: a.token })
    expect(view.body.updates).toHaveLength(1)
    const rows = await t.s.db.db.select().from(events).where(eq(events.accountId, a.account_id))
    expect(rows.filter((e) => e.type === 'support.updated')).toHaveLength(1)
    // A new note, or the same note with a move forward, is a new update.
    expect((await t.req('PATCH', `/admin/support/${id}`, { token: ADMIN, body: { note: 'found it' } })).status).toBe(200)
    expect((await t.req('PATCH', `/admin/support/${id}`, { token: ADMIN, body: { status: 'resolved', note: 'found it' } })).status).toBe(200)
    expect((await t.req('GET', `/v1/support/${id}`, { token: a.token })).body.updates).toHaveLength(3)
  })
})
