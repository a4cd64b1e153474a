/**
 * The saved-card consent page, the mandate's enable_url: GET /mandate?ref=... shows the limits
 * and (sandbox) a card field; POST saves the card and turns auto-refill on (sandbox) or sends the
 * owner to Stripe Checkout in setup mode (stripe), whose return page /mandate/done completes it.
 * Each save needs a fresh card entry: holding the link alone cannot raise the limits.
 * errors (as pages, or JSON for Accept: application/json): NOT_FOUND (unknown ref), RATE_LIMITED.
 */
import { Elysia, t } from 'elysia'
import { http, type Http } from '../../http'
import { pageAnswer, readForm, redirect, withHeaders } from '../../lib/html'
import type { Limits } from '../../payments/gateway'
import type { Services } from '../../services'
import { consentDonePage, consentPage, consentPendingPage } from './pages'
import { applyConsent, limitProblem, resolveRef } from '../../mandate/mandate'
import { readMandate, setMandate } from '../../mandate/store'

const RefQuery = t.Object({ ref: t.Optional(t.String({ maxLength: 100 })), session_id: t.Optional(t.String({ maxLength: 200 })) })

/** The form's limits; a blank field keeps the current value. */
function formLimits(form: Record<string, string>, fallback: Limits): { limits: Limits; error: string | null } {
  const limits = { ...fallback }
  for (const k of ['threshold', 'refill', 'ceiling'] as const) {
    const raw = (form[k] ?? '').trim()
    if (raw === '') continue
    if (!/^\d{1,10}$/.test(raw)) return { limits, error: `${k} must be a whole number of credits.` }
    limits[k] = Number(raw)
  }
  return { limits, error: null }
}

export const consentRoutes = (s: Services, h: Http = http(s)) =>
  new Elysia()
    .get(
      '/mandate',
      ({ query, request, server }) =>
        pageAnswer(s.log, request, async () => {
          const rate = await h.anonymous(request, server)
          const ref = await resolveRef(s, query.ref)
          const m = await readMandate(s.ctx, ref.accountId)
          const view = { ref: ref.mref, email: ref.email, mode: s.payments.mode, mandate: m, limits: m, creditsPerUsd: s.cfg.CREDITS_PER_USD }
          return withHeaders(consentPage(view), rate)
        }),
      { query: RefQuery, detail: { summary: 'HTML: saved-card consent page of the auto-refill mandate (the enable_url)' } },
    )
    .post(
      '/mandate',
      ({ query, request, server }) =>
        pageAnswer(s.log, request, async () => {
          const rate = await h.anonymous(request, server)
          const ref = await resolveRef(s, query.ref)
          const m = await readMandate(s.ctx, ref.accountId)
          const form = await readForm(request)
          const parsed = formLimits(form, m)
          const problem = parsed.error ?? (() => {
            const p = limitProblem(s.cfg, parsed.limits)
            return p ? `${p.field} must be ${p.expected}.` : null
          })()
          const view = { ref: ref.mref, email: ref.email, mode: s.payments.mode, mandate: m, limits: parsed.limits, creditsPerUsd: s.cfg.CREDITS_PER_USD }
          if (problem) return withHeaders(consentPage({ ...view, error: problem }, 400), rate)

          const started = await s.payments.startConsent({
            accountId: ref.accountId,
            ref: ref.mref,
            email: ref.email,
            limits: parsed.limits,
            customerId: m.gateway === s.payments.mode ? m.customerId : null,
            form,
          })
          if (started.kind === 'declined') return withHeaders(consentPage({ ...view, error: started.message }, 402), rate)
          if (started.kind === 'redirect') {
            if (started.customerId !== m.customerId) await setMandate(s.ctx, ref.accountId, { op: 'customer', customerId: started.customerId })
            return redirect(started.url)
          }
          await applyConsent(s, ref.accountId, { card: started.card, limits: parsed.limits, consentId: started.consentId })
          s.log.info('mandate_consent', { account_id: ref.accountId, gateway: s.payments.mode })
          return withHeaders(consentDonePage(ref.email, await readMandate(s.ctx, ref.accountId), s.cfg.CREDITS_PER_USD), rate)
        }),
      { query: RefQuery, parse: 'none', detail: { summary: 'HTML form post: save a card and turn auto-refill on (sandbox), or continue to Stripe Checkout' } },
    )
    .get(
      '/mandate/done',
      ({ query, request, server }) =>
        pageAnswer(s.log, request, async () => {
          const rate = await h.anonymous(request, server)
          const ref = await resolveRef(s, query.ref)
          const completion = query.session_id && s.payments.mode === 'stripe' ? await s.payments.completeConsent(query.session_id) : null
          // The session must be this account's: a session id from another account's checkout is ignored.
          if (!completion || completion.accountId !== ref.accountId) return withHeaders(consentPendingPage(ref.mref), rate)
          await applyConsent(s, ref.accountId, completion)
          return withHeaders(consentDonePage(ref.email, await readMandate(s.ctx, ref.accountId), s.cfg.CREDITS_PER_USD), rate)
        }),
      { query: RefQuery, detail: { summary: "HTML: Stripe Checkout's return page; completes the consent (the webhook does too, once)" } },
    )
