import { Elysia } from 'elysia'
import { bearerAuth, http, type Http } from '../../http'
import type { Services } from '../../services'
import { rejectUnknownFields } from '../../edge/strict-body'
import { MandateResponse, MandateUpdateBody, TopupBody, TopupObject, TopupResponse } from './model'
import { forgetMandate, getMandate, topup, updateMandate } from '../../mandate/mandate'

/** The auto-refill mandate (GET: any token of the account; PUT/DELETE: the operator) and POST /v1/topup. */
export const mandateRoutes = (s: Services, h: Http = http(s)) =>
  new Elysia()
    .use(bearerAuth)
    .get(
      '/v1/mandate',
      async (c) => {
        const principal = await h.admitIn(c)
        return getMandate(s, principal.accountId)
      },
      { response: { 200: MandateResponse }, detail: { summary: 'The auto-refill mandate: limits, card, this month’s refills, enable_url' } },
    )
    .put(
      '/v1/mandate',
      async (c) => {
        const principal = await h.admitIn(c)
        const { body } = c
        return updateMandate(s, principal.accountId, body)
      },
      {
        parse: h.json,
        body: MandateUpdateBody,
        // A misspelt limit must not be dropped silently: unknown fields → BAD_REQUEST.
        transform: rejectUnknownFields(MandateUpdateBody),
        response: { 200: MandateResponse },
        detail: { summary: 'Operator: adjust threshold, refill, ceiling, enabled (enabling needs the consent flow first: CONSENT_REQUIRED)' },
      },
    )
    .delete(
      '/v1/mandate',
      async (c) => {
        const principal = await h.admitIn(c)
        return forgetMandate(s, principal.accountId)
      },
      { response: { 200: MandateResponse }, detail: { summary: 'Operator: disable auto-refill and forget the card (here and at the processor)' } },
    )
    .post(
      '/v1/topup',
      async (c) => {
        const principal = await h.admitIn(c)
        const { body } = c
        return topup(s, principal.accountId, body?.amount)
      },
      {
        parse: h.json,
        body: TopupBody,
        transform: rejectUnknownFields(TopupObject),
        response: { 200: TopupResponse },
        detail: {
          summary:
            "Agent's explicit refill through the owner's mandate: one per HKT day (CONFLICT), within the monthly ceiling (CONFLICT) and the balance cap (BALANCE_CAP); no mandate → 402 PAYMENT_REQUIRED reason no_mandate",
        },
      },
    )
