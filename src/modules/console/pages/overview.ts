import type { SpendHistory, TopSpender } from '../../../account/spend-history'
import { esc } from '../../../pages/html'
import { spendChart } from './chart'

export interface OverviewView {
  balance: number
  balance_cap: number
  daily_cap: number
  spent_today: number
  resets_at: string
  history: SpendHistory
  agentNames: Map<string, string>
  ledgerLag: number
}

const n = (v: number) => v.toLocaleString('en')

function topTable(caption: string, rows: TopSpender[], label: (r: TopSpender) => string): string {
  if (!rows.length) return `<h2>${caption}</h2><p class="muted">No spend in the last 30 days.</p>`
  return `<h2>${caption}</h2><div class="table-wrap"><table><thead><tr><th scope="col">Name</th><th scope="col" class="num">Credits</th></tr></thead><tbody>
${rows.map((r) => `<tr><td>${label(r)}</td><td class="num">${n(r.credits)}</td></tr>`).join('')}
</tbody></table></div>`
}

export function overviewMain(v: OverviewView): string {
  const resets = new Date(v.resets_at)
  return `<div class="cards">
<div class="card"><div class="muted">Balance</div><div class="big">${n(v.balance)}</div><small>credits (cap ${n(v.balance_cap)})</small></div>
<div class="card"><div class="muted">Spent today</div><div class="big">${n(v.spent_today)} <small>of ${n(v.daily_cap)}</small></div><small>daily cap resets <time datetime="${esc(v.resets_at)}">${esc(resets.toISOString().replace('T', ' ').slice(0, 16))} UTC</time> (00:00 HKT)</small></div>
</div>
<h2>Spend, last 30 days</h2>
${spendChart(v.history.days)}
${topTable('Top agents', v.history.topAgents, (r) => (r.name ? `${esc(v.agentNames.get(r.name) ?? r.name)} <code>${esc(r.name)}</code>` : 'Owner token'))}
${topTable('Top routes', v.history.topRoutes, (r) => `<code>${esc(r.name ?? '—')}</code>`)}
<h2>Statement</h2>
<p><a href="/console/ledger?format=csv">Download statement (CSV)</a> · <a href="/console/ledger?format=jsonl">JSON lines</a>
<br><small class="muted">Every ledger entry with opening and closing balances (opening + Σ amounts = closing); the same as <code>GET /v1/ledger</code>. It covers entries already written to the durable ledger${v.ledgerLag ? `; ${n(v.ledgerLag)} are still on their way` : ''}.</small></p>
<form method="get" action="/console/ledger" class="filters">
<div><label for="from">From (date)</label><input id="from" name="from" type="date"></div>
<div><label for="to">To (date, exclusive)</label><input id="to" name="to" type="date"></div>
<div><label for="format">Format</label><select id="format" name="format"><option value="csv">CSV</option><option value="jsonl">JSON lines</option></select></div>
<div><button type="submit">Download statement</button></div>
</form>`
}
