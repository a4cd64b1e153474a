import { esc } from '../../../pages/html'
import { csrfField, type FormToken } from './layout'

export interface MoneyView {
  balance: number
  mandate: {
    enabled: boolean
    threshold: number
    refill: number
    ceiling: number
    card: { brand?: string; last4?: string } | null
    refilled_this_period?: number
    pending_this_period?: number
    enable_url: string
    disabled_reason?: string | null
  }
  buyCreditsUrl: string
}

export function moneyMain(v: MoneyView, csrf: FormToken): string {
  const m = v.mandate
  const card = m.card ? `${esc(m.card.brand ?? 'card')} ending ${esc(m.card.last4 ?? '????')}` : 'none saved'
  const num = (id: string, label: string, value: number) =>
    `<label for="${id}">${label}</label><input id="${id}" name="${id}" type="number" min="0" step="1" value="${value}" required>`
  return `<div class="cards">
<div class="card"><div class="muted">Balance</div><div class="big">${v.balance.toLocaleString('en')}</div><small>credits</small></div>
<div class="card"><div class="muted">Auto-refill</div><div class="big">${m.enabled ? 'On' : 'Off'}</div><small>card: ${card}${m.disabled_reason ? ` · ${esc(m.disabled_reason)}` : ''}</small></div>
<div class="card"><div class="muted">Refills this month</div><div class="big">${(m.refilled_this_period ?? 0).toLocaleString('en')}</div><small>of ${m.ceiling.toLocaleString('en')} ceiling${m.pending_this_period ? ` · ${m.pending_this_period} pending` : ''}</small></div>
</div>
<h2>Mandate</h2>
<section class="card"><form method="post" action="/console/money/mandate">${csrfField(csrf)}
${num('threshold', 'Threshold <small>(refill when the balance falls below, credits)</small>', m.threshold)}
${num('refill', 'Refill <small>(credits per refill)</small>', m.refill)}
${num('ceiling', 'Ceiling <small>(auto-refill credits per HKT month)</small>', m.ceiling)}
<button type="submit">Save limits</button></form>
<p>${m.card ? '' : 'No card yet: '}<a href="${esc(m.enable_url)}">${m.card ? 'Replace the card' : 'Save a card and turn auto-refill on'}</a></p></section>
<h2>Top-up</h2>
<section class="card"><form method="post" action="/console/money/topup">${csrfField(csrf)}
<label for="amount">Amount <small>(credits; empty = the mandate's refill amount)</small></label><input id="amount" name="amount" type="number" min="1" step="1">
<button type="submit">Top up now</button></form>
<p class="muted"><small>Charges the saved card once (at most one top-up per HKT day, within the monthly ceiling). Or <a href="${esc(v.buyCreditsUrl)}">buy a credit pack</a>.</small></p></section>`
}
