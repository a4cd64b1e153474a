import { Elysia } from 'elysia'
import { admitFounder } from '../../auth/founder'
import { bearerAuth, http, type Http } from '../../http'
import { rejectUnknownFields } from '../../edge/strict-body'
import type { Services } from '../../services'
import { AccountParams, AlarmList, BalanceCapBody, BalanceCapResponse, CapabilityState, SignupsState, SlugParams } from './model'
import { reopenSignups, setBalanceCap, setPaused } from './service'

/** Founder surfaces (Authorization: Bearer $ADMIN_TOKEN). */
export const adminRoutes = (s: Services, h: Http = http(s)) => {
  const founder = (bearer: string | undefined, request: Request, server: Parameters<Http['ip']>[1]) =>
    admitFounder(s.cfg.ADMIN_TOKEN, s.guard, bearer, h.ip(request, server))
  return new Elysia()
    .use(bearerAuth)
    .post(
      '/admin/capabilities/:slug/pause',
      async ({ bearer, request, server, params }) => {
        await founder(bearer, request, server)
        return setPaused(s, params.slug, true)
      },
      { params: SlugParams, response: { 200: CapabilityState }, detail: { summary: 'Founder: pause a capability (calls answer API_PAUSED)' } },
    )
    .post(
      '/admin/capabilities/:slug/resume',
      async ({ bearer, request, server, params }) => {
        await founder(bearer, request, server)
        return setPaused(s, params.slug, false)
      },
      { params: SlugParams, response: { 200: CapabilityState }, detail: { summary: 'Founder: resume a paused capability' } },
    )
    .post(
      '/admin/signups/resume',
      async ({ bearer, request, server }) => {
        await founder(bearer, request, server)
        return reopenSignups(s)
      },
      { response: { 200: SignupsState }, detail: { summary: 'Founder: reopen signups after the trial-abuse alarm; the alarm counts afresh' } },
    )
    .put(
      '/admin/accounts/:id/balance-cap',
      async ({ bearer, request, server, params, body }) => {
        await founder(bearer, request, server)
        return setBalanceCap(s, params.id, body.balance_cap)
      },
      { params: AccountParams, parse: h.json, body: BalanceCapBody, transform: rejectUnknownFields(BalanceCapBody), response: { 200: BalanceCapResponse }, detail: { summary: "Founder: set an account's balance cap (credits)" } },
    )
    .get(
      '/admin/alarms',
      async ({ bearer, request, server }) => {
        await founder(bearer, request, server)
        return { alarms: [...s.notConfigured.list(), ...(await s.driftAlarm.list())] }
      },
      { response: { 200: AlarmList }, detail: { summary: "Founder: features this instance refused with NOT_CONFIGURED (the setting each lacks, since when, how often), and providers whose usage report disagrees with our metered ledger (docs/api.md §13d)" } },
    )
}
