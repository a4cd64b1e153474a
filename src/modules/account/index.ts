import { Elysia } from 'elysia'
import { bearerAuth, http, type Http } from '../../http'
import type { Services } from '../../services'
import { ActivityQuery, ActivityResponse, BalanceResponse } from './model'
import { activityOf, balanceOf } from '../../account/views'

export const accountRoutes = (s: Services, h: Http = http(s)) =>
  new Elysia()
    .use(bearerAuth)
    .get(
      '/v1/balance',
      async (c) => {
        const principal = await h.memberIn(c)
        return balanceOf(s, principal.accountId)
      },
      { response: { 200: BalanceResponse }, detail: { summary: 'Balance, caps and top-up links' } },
    )
    .get(
      '/v1/activity',
      async (c) => {
        const principal = await h.memberIn(c)
        const { query } = c
        return activityOf(s, principal.accountId, query.limit, query.cursor)
      },
      { query: ActivityQuery, response: { 200: ActivityResponse }, detail: { summary: 'Recent calls (metadata only) and the balance' } },
    )
