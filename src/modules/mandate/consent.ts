/**
 * The saved-card consent page, the mandate's enable_url: GET /mandate?ref=... shows the limits
 * and (sandbox) a card field; POST saves the card and turns auto-refill on (sandbox) or sends the
 * owner to Stripe Checkout in setup mode (stripe), whose return page /mandate/done completes it —
 * only for the session started last (an older one, or one from before a DELETE, gets a 409 page).
 * The page shows the mandate's limits and never sets them (the operator does, with PUT /v1/mandate):
 * the link is handed to agents. A form carrying other limits → 409 page, nothing saved.
 * errors (as pages, or JSON for Accept: application/json): NOT_FOUND (unknown ref, or a session id
 *         Stripe does not know), RATE_LIMITED.
 */
import { Elysia, t } from 'elysia'
import { ApiError } from '../../errors'
import { http, type Http, type MaybeServer } from '../../http'
import { pageAnswer, readForm, redirect, withHeaders } from '../../pages/html'
import type { Limits } from '../../payments/gateway'
import type { Services } from '../../services'
import { consentDonePage, consentPage, consentPendingPage, consentStalePage } from './pages'
import { applyConsent, resolveRef, startConsent } from '../../mandate/mandate'
import { readMandate } from '../../mandate/store'

const RefQuery = t.Object({ ref: t.Optional(t.String({ maxLength: 100 })), session_id: t.Optional(t.String({ maxLength: 200 })) })

/**
 * The consent link reaches agents, so the form never sets limits: a save applies the mandate's own
 * (the operator's, or the defaults), which the page showed. A form whose limit fields differ from
 * them is refused — the limits changed since the page was shown, or someone tried to pre-set them.
 */
function limitsDiffer(form: Record<string, string>, current: Limits): boolean {
  return (['threshold', 'refill', 'ceiling'] as const).some((k) => form[k] !== undefined && form[k].trim() !== String(current[k]))
}

const LIMITS_CHANGED =
  'These are not the auto-refill limits shown on this page (they may have just changed). Check the limits below and save again; only the account owner changes them, with PUT /v1/mandate.'

export const consentRoutes = (s: Services, h: Http = http(s)) => {
  /** What both the consent page and its form post start from: the link's account and mandate. */
  const consentView = async (request: Request, server: MaybeServer, refParam: string | undefined) => {
    h.requireLocal('sandbox', request, server)
    const rate = await h.anonymous(request, server)
    const ref = await resolveRef(s, refParam)
    const m = await readMandate(s.ctx, ref.accountId)
    return { rate, ref, m, view: { ref: ref.mref, email: ref.email, mode: s.payments.mode, mandate: m, creditsPerUsd: s.cfg.CREDITS_PER_USD } }
  }
  return new Elysia()
    .get(
      '/mandate',
      ({ query, request, server }) =>
        pageAnswer(s.log, request, async () => {
          const { rate, view } = await consentView(request, server, query.ref)
          return withHeaders(consentPage(view), rate)
        }),
      { query: RefQuery, detail: { summary: 'HTML: saved-card consent page of the auto-refill mandate (the enable_url)' } },
    )
    .post(
      '/mandate',
      ({ query, request, server }) =>
        pageAnswer(s.log, request, async () => {
          const { rate, ref, m, view } = await consentView(request, server, query.ref)
          const form = await readForm(request, s.cfg.MAX_BODY_BYTES)
          if (limitsDiffer(form, m)) return withHeaders(consentPage({ ...view, error: LIMITS_CHANGED }, 409), rate)
          const limits: Limits = { threshold: m.threshold, refill: m.refill, ceiling: m.ceiling }

          const started = await s.payments.startConsent({
            accountId: ref.accountId,
            ref: ref.mref,
            email: ref.email,
            limits,
            customerId: m.gateway === s.payments.mode ? m.customerId : null,
            form,
          })
          if (started.kind === 'declined') return withHeaders(consentPage({ ...view, error: started.message }, 402), rate)
          if (started.kind === 'redirect') {
            // Recorded before the owner leaves: any session started earlier can no longer complete.
            await startConsent(s, ref.accountId, started.customerId, started.sessionId)
            return redirect(started.url)
          }
          await applyConsent(s, ref.accountId, { card: started.card, limits, consentId: started.consentId }, false)
          s.log.info('mandate_consent', { account_id: ref.accountId, gateway: s.payments.mode })
          return withHeaders(consentDonePage(ref.email, await readMandate(s.ctx, ref.accountId), s.cfg.CREDITS_PER_USD), rate)
        }),
      { query: RefQuery, parse: 'none', detail: { summary: 'HTML form post: save a card and turn auto-refill on (sandbox), or continue to Stripe Checkout' } },
    )
    .get(
      '/mandate/done',
      ({ query, request, server }) =>
        pageAnswer(s.log, request, async () => {
          h.requireLocal('sandbox', request, server)
          const rate = await h.anonymous(request, server)
          const ref = await resolveRef(s, query.ref)
          const lookup = query.session_id && s.payments.mode === 'stripe' ? await s.payments.completeConsent(query.session_id) : null
          if (lookup?.kind === 'invalid') throw new ApiError('NOT_FOUND', { resource: 'card setup session' })
          const completion = lookup?.kind === 'complete' ? lookup.completion : null
          // The session must be this account's: a session id from another account's checkout is ignored.
          if (!completion || completion.accountId !== ref.accountId) return withHeaders(consentPendingPage(ref.mref), rate)
          // Only the session the owner started last, before any forget, is applied (set-mandate.lua).
          if ((await applyConsent(s, ref.accountId, completion, true)) === 'stale') return withHeaders(consentStalePage(ref.mref), rate)
          return withHeaders(consentDonePage(ref.email, await readMandate(s.ctx, ref.accountId), s.cfg.CREDITS_PER_USD), rate)
        }),
      { query: RefQuery, detail: { summary: "HTML: Stripe Checkout's return page; completes the consent (the webhook does too, once)" } },
    )
}
