/** The trial-abuse alarm: SIGNUP_ALARM_PER_HOUR=3 here. */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'

const ADMIN = 'founder-secret-0123456789abcdef'
let t: TestApp
let seq = 0
beforeAll(async () => {
  t = await startTestApp({ env: { ADMIN_TOKEN: ADMIN, SIGNUP_ALARM_PER_HOUR: '3' } })
})
afterAll(async () => {
  await t.close()
})
beforeEach(async () => {
  expect((await t.req('POST', '/admin/signups/resume', { token: ADMIN })).body).toEqual({ signups: 'open' })
})

const email = () => `alarm${++seq}-${t.prefix}@example.com`
const signup = (e = email()) => t.req('POST', '/v1/signup', { body: { email: e } })
const signupsState = async () => (await t.req('GET', '/status')).body.signups

describe('the signup alarm', () => {
  test('the signup that would exceed the hourly count is refused and pauses signups until the founder resumes', async () => {
    for (let i = 0; i < 3; i++) expect((await signup()).status).toBe(201)
    expect(await signupsState()).toBe('open')
    const refusedEmail = email()
    const r = await signup(refusedEmail)
    expect(r.status).toBe(503)
    expect(r.body.error).toBe('SIGNUPS_PAUSED')
    expect(await signupsState()).toBe('paused')
    // Paused means paused: even once the hour has passed.
    t.clock.advance(2 * 3600_000)
    expect((await signup()).body.error).toBe('SIGNUPS_PAUSED')

    const resumed = await t.req('POST', '/admin/signups/resume', { token: ADMIN })
    expect(resumed.status).toBe(200)
    expect(await signupsState()).toBe('open')
    // The refused e-mail was never claimed; the alarm counts afresh from the resume.
    expect((await signup(refusedEmail)).status).toBe(201)
    expect((await signup()).status).toBe(201)
    expect((await signup()).status).toBe(201)
    expect((await signup()).body.error).toBe('SIGNUPS_PAUSED')
  })

  test('the window slides: signups exactly one hour old no longer count', async () => {
    for (let i = 0; i < 3; i++) expect((await signup()).status).toBe(201)
    t.clock.advance(3600_000 - 1)
    expect((await signup()).body.error).toBe('SIGNUPS_PAUSED')
    await t.req('POST', '/admin/signups/resume', { token: ADMIN })
    for (let i = 0; i < 2; i++) expect((await signup()).status).toBe(201)
    t.clock.advance(1800_000)
    expect((await signup()).status).toBe(201)
    t.clock.advance(1800_000)
    // The first two are now an hour old: two more fit.
    expect((await signup()).status).toBe(201)
    expect((await signup()).status).toBe(201)
    expect(await signupsState()).toBe('open')
  })

  test('failed signups (e-mail taken, unknown referrer) do not count towards the alarm', async () => {
    const taken = email()
    expect((await signup(taken)).status).toBe(201)
    for (let i = 0; i < 5; i++) expect((await signup(taken)).body.error).toBe('EMAIL_EXISTS')
    for (let i = 0; i < 5; i++)
      expect((await t.req('POST', '/v1/signup', { body: { email: email(), referred_by: 'ref_AAAAAAAAAAAA' } })).body.error).toBe('BAD_REQUEST')
    expect((await signup()).status).toBe(201)
    expect((await signup()).status).toBe(201)
    expect(await signupsState()).toBe('open')
  })

  test('20 simultaneous signups: exactly 3 get through, the rest are refused and signups pause', async () => {
    const rs = await Promise.all(Array.from({ length: 20 }, () => signup()))
    expect(rs.filter((r) => r.status === 201)).toHaveLength(3)
    expect(rs.filter((r) => r.status === 503 && r.body.error === 'SIGNUPS_PAUSED')).toHaveLength(17)
    expect(await signupsState()).toBe('paused')
  })
  test('at the limit, a signup on a taken e-mail answers EMAIL_EXISTS and does not pause signups', async () => {
    const taken = email()
    for (const e of [taken, email(), email()]) expect((await signup(e)).status).toBe(201)
    expect((await signup(taken)).body.error).toBe('EMAIL_EXISTS')
    expect(await signupsState()).toBe('open')
  })

  test('signups on a taken e-mail sent at once hold no place in the count: real signups under the alarm pass', async () => {
    const taken = email()
    expect((await signup(taken)).status).toBe(201)
    // 1 counted; 2 more fit under the alarm of 3, however many attempts on the taken e-mail run beside them.
    const rs = await Promise.all([...Array.from({ length: 20 }, () => signup(taken)), signup(), signup()])
    expect(rs.slice(20).map((r) => r.status)).toEqual([201, 201])
    expect(await signupsState()).toBe('open')
  })
})
