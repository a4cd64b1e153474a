/**
 * The console's Policies page shows the account's warning levels (docs/api.md §13a, §9) and its
 * account form sets them through the same service as PUT /v1/policies: a new list, empty = off,
 * a form sent back unchanged keeps levels changed through the API meanwhile, and a box that is not
 * a list of whole numbers 1..100 is refused with the API's error, changing nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ConsoleClient, formOf } from '../helpers/console'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const levels = async (token: string) => (await t.req('GET', '/v1/policies', { token })).body.account.thresholds as number[]

describe('console: warning levels on the Policies page', () => {
  test('shown, set, turned off, kept when untouched, and refused when malformed', async () => {
    const a = await t.signup()
    const c = new ConsoleClient(t)
    expect((await c.signIn(a.token)).status).toBe(303)

    let page = await c.get('/console/policies')
    expect(page.status).toBe(200)
    expect(page.text).toContain('Warning levels')
    expect(page.text).toContain('<strong>50%, 80%, 100%</strong>')
    expect(formOf(page.text, 'id="acct-cap"').thresholds).toBe('50, 80, 100')

    let r = await c.post('/console/policies', { ...formOf(page.text, 'id="acct-cap"'), thresholds: '90, 20' })
    expect(r.status).toBe(200)
    expect(await levels(a.token)).toEqual([20, 90])
    page = await c.get('/console/policies')
    expect(page.text).toContain('<strong>20%, 90%</strong>')

    // Changed through the API after the page was shown: saving the cap with the box untouched keeps them.
    await t.req('PUT', '/v1/policies', { token: a.token, body: { account: { thresholds: [60] } } })
    r = await c.post('/console/policies', { ...formOf(page.text, 'id="acct-cap"'), daily_cap: '500' })
    expect(r.status).toBe(200)
    expect((await t.req('GET', '/v1/policies', { token: a.token })).body.account).toMatchObject({ daily_cap: 500, thresholds: [60] })

    // Each rendered form is good for one submission: a fresh page for each.
    for (const bad of ['abc', '0', '101', '50, 50', '5.5']) {
      page = await c.get('/console/policies')
      r = await c.post('/console/policies', { ...formOf(page.text, 'id="acct-cap"'), thresholds: bad })
      expect([bad, r.status]).toEqual([bad, 400])
      expect(r.text).toContain('BAD_REQUEST')
    }
    expect(await levels(a.token)).toEqual([60])

    page = await c.get('/console/policies')
    r = await c.post('/console/policies', { ...formOf(page.text, 'id="acct-cap"'), thresholds: '' })
    expect(r.status).toBe(200)
    expect(await levels(a.token)).toEqual([])
    expect((await c.get('/console/policies')).text).toContain('<strong>Off</strong>')
  })
})
