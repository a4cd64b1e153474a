/** Credit-pack pages (/topup?ref=...): a human adds credits once, without a mandate. */
import { esc, htmlPage } from '../../pages/html'
import { usd, type Pack } from '../../payments/amounts'

export interface PacksView {
  ref: string
  email: string
  mode: 'sandbox' | 'stripe'
  packs: Pack[]
  balanceCap: number
  creditsPerUsd: number
  error?: string
}

function packForm(v: PacksView, p: Pack): string {
  const action = `/topup?ref=${esc(encodeURIComponent(v.ref))}&amp;pack=${esc(p.id)}`
  const price = `$${(p.cents / 100).toFixed(2)}`
  const card =
    v.mode === 'sandbox'
      ? `<label for="card-${esc(p.id)}">Card number</label>
<input id="card-${esc(p.id)}" name="card" class="mono" inputmode="numeric" autocomplete="cc-number" required maxlength="23" placeholder="4242 4242 4242 4242">
<button type="submit">Pay ${price} (sandbox)</button>`
      : `<button type="submit">Pay ${price} with Stripe</button>`
  return `<form class="pack" method="post" action="${action}">
<h2>${esc(p.credits)} credits — ${price}</h2>
${card}
</form>`
}

export function packsPage(v: PacksView, only?: Pack, status = 200): Response {
  return htmlPage(
    status,
    'Add credits',
    `<h1>Add credits for ${esc(v.email)}</h1>
<p>A one-time payment; nothing is saved for later. To let your agent refill itself within limits you choose,
set up <a href="/mandate?ref=${esc(encodeURIComponent(v.ref))}">auto-refill</a> instead.</p>
${v.error ? `<p class="error" role="alert">${esc(v.error)}</p>` : ''}
${(only ? [only] : v.packs).map((p) => packForm(v, p)).join('\n')}
${v.mode === 'sandbox' ? '<p class="note">Sandbox (development only, no real payments): use the test card 4242 4242 4242 4242.</p>' : ''}
<p class="note">The balance cap is ${esc(v.balanceCap)} credits (${esc(usd(v.balanceCap, v.creditsPerUsd))}); a payment that would pass it is held for review and refunded if not accepted.</p>`,
  )
}

export function creditedPage(credits: number, balance: number): Response {
  return htmlPage(
    200,
    'Credits added',
    `<h1 class="ok">${esc(credits)} credits added</h1>
<p>The balance is now <strong class="balance">${esc(balance)}</strong> credits. You can close this page; your agent can retry now.</p>`,
  )
}

export function checkoutDonePage(): Response {
  return htmlPage(
    200,
    'Payment received',
    `<h1>Thank you</h1>
<p>Your payment is being confirmed; the credits appear on the balance within a minute. You can close this page.</p>`,
  )
}
