import { Elysia } from 'elysia'
import { bearerAuth, http, type Http } from '../../http'
import { listRuns } from '../../ledger/runs'
import type { Services } from '../../services'
import { RunList } from './model'

/** Run budgets (docs/api.md §13c): the owner lists the account's, an agent its subtree's. */
export const runRoutes = (s: Services, h: Http = http(s)) =>
  new Elysia().use(bearerAuth).get(
    '/v1/runs',
    async (c) => {
      const principal = await h.admitIn(c)
      return { runs: await listRuns(s.ctx, principal) }
    },
    { response: { 200: RunList }, detail: { summary: 'Run budgets (X-Budget-Run), newest first: open ones and those ended in the last 7 days' } },
  )
