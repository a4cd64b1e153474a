/**
 * The console's proposals page decides through the same functions as POST /v1/proposals/{id}/approve
 * and /decline: an approved cap raise is in force for the API at once; a declined one is not; a
 * decided proposal leaves the pending list and cannot be decided twice (CONFLICT on the page); a
 * note the API refuses (over 280 characters) is refused here too, and nothing is decided.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { ConsoleClient, csrfOf } from '../helpers/console'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t?.close()
})

describe('console proposals', () => {
  test('Approve applies the change; Decline does not; a second decision is CONFLICT', async () => {
    const a = await t.signup()
    const agent = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'asker', daily_cap: 5 } })
    const c = new ConsoleClient(t)
    expect((await c.signIn(a.token)).status).toBe(303)
    expect((await c.get('/console/proposals')).text).toContain('No proposals.')

    const raise = await t.req('POST', '/v1/proposals', { token: agent.body.token, body: { kind: 'raise_daily_cap', value: 50, agent_id: agent.body.id, reason: 'need <more> room' } })
    expect(raise.status).toBe(201)
    const other = await t.req('POST', '/v1/proposals', { token: agent.body.token, body: { kind: 'raise_daily_cap', value: 90, agent_id: agent.body.id, reason: 'even more' } })
    expect(other.status).toBe(201)

    const page = await c.get('/console/proposals')
    expect(page.text).toContain(`data-proposal="${raise.body.id}"`)
    expect(page.text).toContain('need &#60;more&#62; room')
    expect(page.text).toContain('>Approve</button>')
    expect(page.text).toContain('>Decline</button>')

    const csrf = csrfOf(page.text)
    const approved = await c.post(`/console/proposals/${raise.body.id}/approve`, { csrf, note: 'ok' })
    expect(approved.status).toBe(200)
    expect(approved.text).toContain('approved')
    expect((await t.req('GET', `/v1/proposals/${raise.body.id}`, { token: a.token })).body.status).toBe('approved')
    const policies = await t.req('GET', '/v1/policies', { token: a.token })
    expect(policies.body.agents[agent.body.id].daily_cap).toBe(50)

    // Each form acts once (test/http/console.double-submit): the next decision comes from the page the last one answered with.
    const declined = await c.post(`/console/proposals/${other.body.id}/decline`, { csrf: csrfOf(approved.text) })
    expect(declined.status).toBe(200)
    expect((await t.req('GET', `/v1/proposals/${other.body.id}`, { token: a.token })).body.status).toBe('declined')
    expect((await t.req('GET', '/v1/policies', { token: a.token })).body.agents[agent.body.id].daily_cap).toBe(50)

    const again = await c.post(`/console/proposals/${raise.body.id}/decline`, { csrf: csrfOf(declined.text) })
    expect(again.status).toBe(409)
    expect(again.text).toContain('CONFLICT')
    expect((await c.get('/console/proposals')).text).toContain('No proposals.')
    // Without the form's token nothing is decided.
    const third = await t.req('POST', '/v1/proposals', { token: agent.body.token, body: { kind: 'raise_daily_cap', value: 70, agent_id: agent.body.id, reason: 'x' } })
    expect((await c.post(`/console/proposals/${third.body.id}/approve`, {})).status).toBe(403)
    expect((await t.req('GET', `/v1/proposals/${third.body.id}`, { token: a.token })).body.status).toBe('pending')
  })

  test('a decision note over 280 characters is refused on the console as on the API', async () => {
    const a = await t.signup()
    const c = new ConsoleClient(t)
    expect((await c.signIn(a.token)).status).toBe(303)
    const agent = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'asker', daily_cap: 5 } })
    const p1 = await t.req('POST', '/v1/proposals', { token: agent.body.token, body: { kind: 'raise_daily_cap', value: 50, agent_id: agent.body.id, reason: 'r' } })
    const p2 = await t.req('POST', '/v1/proposals', { token: agent.body.token, body: { kind: 'raise_daily_cap', value: 60, agent_id: agent.body.id, reason: 'r' } })
    expect((await t.req('POST', `/v1/proposals/${p1.body.id}/decline`, { token: a.token, body: { note: 'x'.repeat(281) } })).status).toBe(400)
    const r = await c.submit('/console/proposals', `/console/proposals/${p2.body.id}/decline`, { note: 'x'.repeat(5000) })
    expect(r.status).toBe(400)
    expect(r.text).toContain('BAD_REQUEST: Malformed request: note must be string, maxLength 280.')
    const approve = await c.submit('/console/proposals', `/console/proposals/${p2.body.id}/approve`, { note: 'x'.repeat(281) })
    expect(approve.status).toBe(400)
    for (const p of [p1, p2]) expect((await t.req('GET', `/v1/proposals/${p.body.id}`, { token: a.token })).body.status).toBe('pending')
    expect((await t.req('GET', '/v1/policies', { token: a.token })).body.agents[agent.body.id].daily_cap).toBe(5)
    // At 280 it is taken.
    expect((await c.submit('/console/proposals', `/console/proposals/${p2.body.id}/decline`, { note: 'x'.repeat(280) })).status).toBe(200)
    expect((await t.req('GET', `/v1/proposals/${p2.body.id}`, { token: a.token })).body).toMatchObject({ status: 'declined', note: 'x'.repeat(280) })
  })
})
