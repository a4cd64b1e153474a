/**
 * Credit packs for the human (GET/POST /topup?ref=..., the `topup` and `packs` links of
 * GET /v1/balance and PAYMENT_REQUIRED) and the Stripe webhook endpoint.
 * errors: NOT_FOUND (unknown ref or pack), BALANCE_CAP (parked: true), BAD_REQUEST (signature),
 *         NOT_CONFIGURED (webhook without Stripe), RATE_LIMITED (pages, per IP).
 */
import { Elysia, t } from 'elysia'
import { ApiError } from '../../errors'
import { http, type Http } from '../../http'
import { pageAnswer, readForm, redirect, withHeaders } from '../../pages/html'
import { readText } from '../../edge/body'
import { packs, type Pack } from '../../payments/amounts'
import type { Services } from '../../services'
import { resolveRef, type MandateRef } from '../../mandate/mandate'
import { checkoutDonePage, creditedPage, packsPage, type PacksView } from './pages'
import { creditPack, receiveWebhook } from './service'
import { readAccount } from '../../redis/account-hash'

const PackQuery = t.Object({ ref: t.Optional(t.String({ maxLength: 100 })), pack: t.Optional(t.String({ maxLength: 20 })) })

export const topupRoutes = (s: Services, h: Http = http(s)) => {
  const all = packs(s.cfg.CREDITS_PER_USD)
  const packOf = (id: string | undefined): Pack | undefined => {
    if (id === undefined) return undefined
    const p = all.find((x) => x.id === id)
    if (!p) throw new ApiError('NOT_FOUND', { resource: 'credit pack' })
    return p
  }
  const view = async (ref: MandateRef): Promise<PacksView> => ({
    ref: ref.mref,
    email: ref.email,
    mode: s.payments.mode,
    packs: all,
    balanceCap: (await readAccount(s.ctx, ref.accountId, 'balance_cap')).balance_cap ?? s.cfg.DEFAULT_BALANCE_CAP,
    creditsPerUsd: s.cfg.CREDITS_PER_USD,
  })
  const checkout = (ref: MandateRef, p: Pack, form: Record<string, string>) =>
    s.payments.startCheckout({ accountId: ref.accountId, ref: ref.mref, credits: p.credits, cents: p.cents, label: `${p.credits} API credits`, form })

  return new Elysia()
    .get(
      '/topup',
      ({ query, request, server }) =>
        pageAnswer(s.log, request, async () => {
          h.requireLocal('sandbox', request, server)
          const rate = await h.anonymous(request, server)
          const ref = await resolveRef(s, query.ref)
          const p = packOf(query.pack)
          // A pack's own link in Stripe mode is the Checkout payment link: straight to Stripe.
          if (p && s.payments.mode === 'stripe') {
            const started = await checkout(ref, p, {})
            if (started.kind === 'redirect') return redirect(started.url)
          }
          return withHeaders(packsPage(await view(ref), p), rate)
        }),
      { query: PackQuery, detail: { summary: 'HTML: buy a credit pack (Stripe Checkout; sandbox: a test-card form)' } },
    )
    .post(
      '/topup',
      ({ query, request, server }) =>
        pageAnswer(s.log, request, async () => {
          h.requireLocal('sandbox', request, server)
          const rate = await h.anonymous(request, server)
          const ref = await resolveRef(s, query.ref)
          const p = packOf(query.pack)
          if (!p) throw new ApiError('NOT_FOUND', { resource: 'credit pack' })
          const started = await checkout(ref, p, await readForm(request, s.cfg.MAX_BODY_BYTES))
          if (started.kind === 'redirect') return redirect(started.url)
          if (started.kind === 'declined') return withHeaders(packsPage({ ...(await view(ref)), error: started.message }, p, 402), rate)
          const out = await creditPack(s, ref.accountId, p.credits, started.chargeId)
          if (out.kind === 'parked') throw new ApiError('BALANCE_CAP', { balance_cap: out.balanceCap, balance: out.balance, parked: true })
          if (out.kind !== 'credited') throw new ApiError('NOT_FOUND', { resource: 'account' })
          return withHeaders(creditedPage(p.credits, out.balance), rate)
        }),
      { query: PackQuery, parse: 'none', detail: { summary: 'HTML form post: pay for a credit pack' } },
    )
    .get(
      '/topup/done',
      ({ request, server }) =>
        pageAnswer(s.log, request, async () => {
          h.requireLocal('sandbox', request, server)
          return withHeaders(checkoutDonePage(), await h.anonymous(request, server))
        }),
      { query: PackQuery, detail: { summary: "HTML: Stripe Checkout's return page of a credit pack" } },
    )
    .post(
      '/webhooks/stripe',
      async ({ request }) => receiveWebhook(s, await readText(request, s.cfg.MAX_BODY_BYTES), request.headers.get('stripe-signature')),
      {
        // The raw body is what Stripe signed: parsing it first would break the signature.
        parse: 'none',
        detail: {
          summary:
            'Stripe webhook (signature-verified; each event applied once): completes consents, credits packs, heals refills. Not rate-limited per IP: the signature is the guard.',
        },
      },
    )
}
