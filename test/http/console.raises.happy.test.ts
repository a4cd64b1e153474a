/**
 * Temporary raises in the owner console (docs/api.md §13b): the proposals page approves for a
 * chosen duration (or as the agent asked), the policies and agents pages show the raised value with
 * its end and its base, saving another field of the policy form leaves the raise to lapse, and a
 * duration the API refuses is refused here too with nothing decided.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { ConsoleClient, csrfOf, formOf } from '../helpers/console'
import { hktDay } from '../../src/clock'

let t: TestApp
const NOON = (hktDay(Date.now()) + 2) * 86400_000 - 8 * 3600_000 + 12 * 3600_000
beforeAll(async () => {
  t = await startTestApp()
  t.clock.set(NOON)
})
afterAll(async () => {
  await t?.close()
})

const utc = (ms: number) => new Date(ms).toISOString().replace('T', ' ').slice(0, 16) + ' UTC'

describe('console: temporary raises', () => {
  test('approve for a time, see it with its end, keep it through another save, see it lapse', async () => {
    const o = await t.signup()
    const agent = (await t.req('POST', '/v1/agents', { token: o.token, body: { name: 'asker', daily_cap: 2, allowlist: ['test.cheap'] } })).body
    const c = new ConsoleClient(t)
    expect((await c.signIn(o.token)).status).toBe(303)
    const asked = (await t.req('POST', '/v1/proposals', { token: agent.token, body: { kind: 'raise_daily_cap', value: 9, reason: 'an hour of work', for_s: 3600 } })).body
    const plain = (await t.req('POST', '/v1/proposals', { token: agent.token, body: { kind: 'allow', value: 'test.echo', reason: 'one more route' } })).body
    const topup = (await t.req('POST', '/v1/proposals', { token: agent.token, body: { kind: 'topup', value: 1000, reason: 'money' } })).body
    const child = (await t.req('POST', '/v1/agents', { token: agent.token, body: { name: 'child', budget: 5 } })).body
    const childBudget = (await t.req('POST', '/v1/proposals', { token: agent.token, body: { kind: 'raise_budget', value: 9, agent_id: child.id, reason: 'more' } })).body
    expect(childBudget.status).toBe('pending')

    const page = await c.get('/console/proposals')
    expect(page.text).toContain('Asked for <strong>1h</strong> only')
    expect(page.text).toContain('<option value="">As asked (1h)</option>')
    expect(page.text).toContain('<option value="">For good</option>')
    expect(page.text).toContain('<option value="900">15 minutes</option>')
    // A top-up cannot lapse, nor a sub-agent's budget: no duration offered.
    const card = (id: string) => {
      expect(page.text).toContain(`data-proposal="${id}"`)
      const from = page.text.slice(page.text.indexOf(`data-proposal="${id}"`))
      return from.slice(0, from.indexOf('</section>'))
    }
    expect(card(topup.id)).not.toContain('name="for_s"')
    expect(card(childBudget.id)).not.toContain('name="for_s"')
    expect(card(asked.id)).toContain('name="for_s"')

    // Out of bounds: refused as the API refuses it; nothing decided.
    const bad = await c.post(`/console/proposals/${plain.id}/approve`, { csrf: csrfOf(page.text), for_s: '30' })
    expect(bad.status).toBe(400)
    expect(bad.text).toContain('for_s')
    expect((await t.req('GET', `/v1/proposals/${plain.id}`, { token: o.token })).body.status).toBe('pending')

    const first = await c.post(`/console/proposals/${asked.id}/approve`, { csrf: csrfOf((await c.get('/console/proposals')).text), for_s: '' })
    expect(first.status).toBe(200)
    expect(first.text).toContain(`until ${utc(NOON + 3600_000)}, then it lapses by itself`)
    const second = await c.post(`/console/proposals/${plain.id}/approve`, { csrf: csrfOf(first.text), for_s: '900' })
    expect(second.status).toBe(200)
    expect((await t.req('GET', `/v1/proposals/${plain.id}`, { token: o.token })).body.lapses_at).toBe(new Date(NOON + 900_000).toISOString())

    const policies = await c.get('/console/policies')
    expect(policies.text).toContain(`the daily cap is raised until <time datetime="${new Date(NOON + 3600_000).toISOString()}">${utc(NOON + 3600_000)}</time>, then back to <strong>2</strong>`)
    expect(policies.text).toContain('the allowlist is raised until')
    const agents = await c.get('/console/agents')
    expect(agents.text).toContain('daily cap 9')
    expect(agents.text).toContain('then back to <strong>2</strong>')

    // Saving the form with only the per-call maximum changed keeps the raise (it still lapses).
    const form = formOf(policies.text, `name="agent" value="${agent.id}"`)
    expect(form.daily_cap).toBe('9')
    const saved = await c.post('/console/policies', { ...form, per_call_max: '4' })
    expect(saved.status).toBe(200)
    const api = (await t.req('GET', '/v1/policies', { token: o.token })).body.agents[agent.id]
    expect(api).toMatchObject({ daily_cap: 9, per_call_max: 4, raised: { daily_cap: { base: 2 } } })

    t.clock.set(NOON + 3600_000)
    const after = await c.get('/console/policies')
    expect(after.text).not.toContain('Temporary:')
    expect(formOf(after.text, `name="agent" value="${agent.id}"`).daily_cap).toBe('2')
  })
})
