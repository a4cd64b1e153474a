/**
 * GET /v1/ledger: the account's ledger statement (operator), streamed (ledger/statement.ts).
 * errors: UNAUTHORIZED, FORBIDDEN (agent token), BAD_REQUEST (from, to, format), RATE_LIMITED.
 */
import { Elysia } from 'elysia'
import { bearerAuth, http, type Http } from '../../http'
import type { Services } from '../../services'
import { statementFormat, statementHeaders, statementLag, statementRange, statementStream } from '../../ledger/statement'
import { LedgerQuery } from './model'

export const ledgerRoutes = (s: Services, h: Http = http(s)) =>
  new Elysia().use(bearerAuth).get(
    '/v1/ledger',
    async (c) => {
      const principal = await h.admitIn(c)
      const { query } = c
      const range = statementRange(query, s.ctx.clock.now())
      const format = statementFormat(query.format)
      const lag = await statementLag(s.ctx, principal.accountId)
      return new Response(await statementStream(s.db.db, principal.accountId, range, format), {
        headers: { ...statementHeaders(principal.accountId, range, format, lag), ...(c.set.headers as Record<string, string>) },
      })
    },
    {
      query: LedgerQuery,
      detail: {
        summary:
          "Operator: the account's ledger statement for from ≤ at < to, as JSON lines or CSV, opening and closing balances included (opening + Σ amounts = closing). It covers the entries already flushed to Postgres; x-pab-ledger-lag counts those still waiting.",
      },
    },
  )
