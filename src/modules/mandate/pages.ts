/** The saved-card consent pages (/mandate?ref=...), server-rendered, no JavaScript. */
import { esc, htmlPage } from '../../pages/html'
import { usd } from '../../payments/amounts'
import type { Limits } from '../../payments/gateway'
import type { MandateRecord } from '../../mandate/store'

export interface ConsentView {
  ref: string
  email: string
  mode: 'sandbox' | 'stripe'
  mandate: MandateRecord
  creditsPerUsd: number
  error?: string
}

function current(v: ConsentView): string {
  const m = v.mandate
  if (m.disabledReason === 'authentication_required')
    return '<p class="error">Your bank asked to confirm the last auto-refill, so auto-refill was turned off. Save your card again below to turn it back on.</p>'
  if (m.enabled && m.card)
    return `<p class="ok">Auto-refill is <strong>on</strong> with the ${esc(m.card.brand)} card ending <strong>${esc(m.card.last4)}</strong>. Saving a card here replaces it.</p>`
  if (m.card) return `<p>Auto-refill is <strong>off</strong>; a ${esc(m.card.brand)} card ending ${esc(m.card.last4)} is saved.</p>`
  return '<p>Auto-refill is <strong>off</strong> and no card is saved.</p>'
}

export function consentPage(v: ConsentView, status = 200): Response {
  const m = v.mandate
  const $ = (c: number) => `${c} credits (${usd(c, v.creditsPerUsd)})`
  // The limits are the operator's (PUT /v1/mandate), shown, never edited here: the link is handed
  // to agents. The hidden copies let the POST refuse a save under limits other than those shown.
  const echo = (name: keyof Limits) => `<input type="hidden" name="${name}" value="${esc(m[name])}">`
  const card =
    v.mode === 'sandbox'
      ? `
<label for="card">Card number</label>
<input id="card" name="card" class="mono" inputmode="numeric" autocomplete="cc-number" required maxlength="23" placeholder="4242 4242 4242 4242">
<p class="note">Sandbox (development only, no real payments): use the test card 4242 4242 4242 4242. Any other number is declined.</p>
<button type="submit">Save card and turn on auto-refill</button>`
      : `
<button type="submit">Continue to Stripe to save a card</button>
<p class="note">Stripe collects the card on its own page; this service never sees the number.</p>`
  return htmlPage(
    status,
    'Auto-refill',
    `<h1>Auto-refill for ${esc(v.email)}</h1>
<p>Your AI agent spends a prepaid credit balance. With auto-refill, the saved card is charged automatically
when the balance runs low — only within these limits. You can turn it off at any time.</p>
${current(v)}
${v.error ? `<p class="error" role="alert">${esc(v.error)}</p>` : ''}
<ul class="limits">
<li>When the balance drops below <strong>${esc($(m.threshold))}</strong>, add <strong>${esc($(m.refill))}</strong>.</li>
<li>Never more than <strong>${esc($(m.ceiling))}</strong> per calendar month (Hong Kong time).</li>
</ul>
<p class="note">Saving a card agrees to these limits. Only the account owner changes them, with PUT /v1/mandate and the owner token.</p>
<form method="post" action="/mandate?ref=${esc(encodeURIComponent(v.ref))}">
${echo('threshold')}${echo('refill')}${echo('ceiling')}
${card}
</form>`,
  )
}

export function consentDonePage(email: string, m: MandateRecord, creditsPerUsd: number): Response {
  const $ = (c: number) => `${c} credits (${usd(c, creditsPerUsd)})`
  return htmlPage(
    200,
    'Auto-refill is on',
    `<h1 class="ok">Auto-refill is on</h1>
<p>For <strong>${esc(email)}</strong>, with the ${esc(m.card?.brand ?? 'card')} card ending <strong class="last4">${esc(m.card?.last4 ?? '')}</strong>.</p>
<ul>
<li>When the balance drops below ${esc($(m.threshold))}, ${esc($(m.refill))} are added.</li>
<li>At most ${esc($(m.ceiling))} per calendar month (Hong Kong time).</li>
</ul>
<p class="note">You can close this page; your agent can retry now. To change the limits or turn auto-refill off, use
PUT or DELETE /v1/mandate with your owner token; to replace the card, come back to this page.</p>`,
  )
}

/** A setup session replaced by a newer one, or started before the card was forgotten: nothing changed. */
export function consentStalePage(ref: string): Response {
  return htmlPage(
    409,
    'This card setup is no longer valid',
    `<h1 class="error">This card setup is no longer valid</h1>
<p>A newer card setup was started, or the saved card was removed, after this one began, so it was not applied and nothing
changed. <a href="/mandate?ref=${esc(encodeURIComponent(ref))}">Open the auto-refill page</a> to save a card again.</p>`,
  )
}

export function consentPendingPage(ref: string): Response {
  return htmlPage(
    202,
    'Waiting for confirmation',
    `<h1>Waiting for Stripe to confirm your card</h1>
<p>This usually takes a few seconds. <a href="/mandate?ref=${esc(encodeURIComponent(ref))}">Check the auto-refill page</a>.</p>`,
  )
}
