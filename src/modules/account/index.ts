import { Elysia } from 'elysia'
import { bearerAuth, http, type Http } from '../../http'
import type { Services } from '../../services'
import { ActivityQuery, ActivityResponse, BalanceResponse, CallDetail } from './model'
import { activityOf, balanceOf, callOf, reachOf } from '../../account/views'

export const accountRoutes = (s: Services, h: Http = http(s)) =>
  new Elysia()
    .use(bearerAuth)
    .get(
      '/v1/balance',
      async (c) => {
        const principal = await h.admitIn(c)
        return balanceOf(s, principal.accountId)
      },
      { response: { 200: BalanceResponse }, detail: { summary: 'Balance, caps and top-up links' } },
    )
    .get(
      '/v1/activity',
      async (c) => {
        const principal = await h.admitIn(c)
        const { query } = c
        return activityOf(s, principal.accountId, query.limit, query.cursor, {}, await reachOf(s, principal))
      },
      { query: ActivityQuery, response: { 200: ActivityResponse }, detail: { summary: "Recent calls (metadata only) and the balance; an agent token lists its own and its descendants' calls" } },
    )
    .get(
      '/v1/activity/:call_id',
      async (c) => {
        const principal = await h.admitIn(c)
        return callOf(s, principal.accountId, c.params.call_id, await reachOf(s, principal))
      },
      {
        response: { 200: CallDetail },
        detail: { summary: "One call: a metered call's model, tokens, reservation and settled charge (another account's, or for an agent token one outside its subtree → NOT_FOUND)" },
      },
    )
