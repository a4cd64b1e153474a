import type { AgentView } from '../../../governance/agents'
import type { ProposalView } from '../../../proposals/record'
import { esc } from '../../../pages/html'
import { csrfField, type FormToken } from './layout'
import { APPROVE_FOR } from './raised'
import { durationWords } from '../../../events/render'

const KIND: Record<string, string> = {
  raise_daily_cap: 'Raise the daily cap to',
  raise_budget: 'Raise the budget to',
  allow: 'Allow the pattern',
  topup: 'Top up',
}

/** For how long an approval holds (docs/api.md §13b): as asked (for good when nothing was asked), or a duration. */
function forSelect(i: number, asked: number | null): string {
  const options = APPROVE_FOR.map(([v, label]) => `<option value="${v}">${v === '' ? (asked ? `As asked (${esc(durationWords(asked))})` : 'For good') : label}</option>`)
  return `<label for="for-${i}">For <small>(a temporary raise lapses by itself)</small></label><select id="for-${i}" name="for_s">${options.join('')}</select>`
}

/** A top-up cannot lapse, nor a sub-agent's budget (carved from its parent's): no duration offered. */
const lapsable = (p: ProposalView, agents: AgentView[]) =>
  p.kind !== 'topup' && !(p.kind === 'raise_budget' && agents.find((a) => a.id === p.agent_id)?.parent_id)

/** Pending proposals (docs/api.md §11) with Approve / Decline, an optional note and, for a policy, a duration. */
export function proposalsMain(pending: ProposalView[], agents: AgentView[], csrf: FormToken): string {
  if (!pending.length) return '<p>No proposals.</p><p class="muted"><small>When an agent asks for more room (a higher cap, a budget, an allowlist pattern, a top-up), it is listed here with Approve / Decline.</small></p>'
  const names = new Map(agents.map((a) => [a.id, a.name]))
  return pending
    .map((p, i) => {
      const who = p.agent_id ? `${esc(names.get(p.agent_id) ?? p.agent_id)} <code>${esc(p.agent_id)}</code>` : 'the account'
      const base = `/console/proposals/${encodeURIComponent(p.id)}`
      return `<section class="card" data-proposal="${esc(p.id)}">
<h2>${esc(KIND[p.kind] ?? p.kind)} <code>${esc(String(p.value))}</code> for ${who}</h2>
<p>${esc(p.reason)}</p>
<p class="muted"><small>Proposed by <code>${esc(p.proposed_by)}</code> at ${esc(p.created_at.replace('T', ' ').slice(0, 16))} UTC; expires ${esc(p.expires_at.replace('T', ' ').slice(0, 16))} UTC.</small></p>
${p.for_s ? `<p>Asked for <strong>${esc(durationWords(p.for_s))}</strong> only: approved, it lapses by itself.</p>` : ''}
<form method="post" action="${base}/approve">${csrfField(csrf)}
<label for="note-${i}">Note <small>(optional)</small></label><input id="note-${i}" name="note" type="text" maxlength="280">
${lapsable(p, agents) ? forSelect(i, p.for_s) : ''}
<button type="submit">Approve</button><button type="submit" class="quiet" formaction="${base}/decline">Decline</button></form>
</section>`
    })
    .join('\n')
}
