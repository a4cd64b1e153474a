import type { AgentView } from '../../../governance/agents'
import { esc } from '../../../pages/html'
import { csrfField } from './layout'

interface AccountPolicy {
  daily_cap: number
  balance_cap: number
  allowlist: string[] | null
}
interface AgentPolicy {
  daily_cap: number | null
  allowlist: string[] | null
  per_call_max: number | null
}

const numInput = (id: string, name: string, value: number | null, label: string, required = false) =>
  `<label for="${id}">${label}</label><input id="${id}" name="${name}" type="number" min="0" step="1" value="${value ?? ''}"${required ? ' required' : ''}>`
const listInput = (id: string, name: string, list: string[] | null, label: string) =>
  `<label for="${id}">${label} <small>(one pattern per line; empty = no allowlist)</small></label><textarea id="${id}" name="${name}" rows="3">${esc((list ?? []).join('\n'))}</textarea>`

export function policiesMain(p: { account: AccountPolicy; agents: Record<string, AgentPolicy> }, agents: AgentView[], csrf: string): string {
  const names = new Map(agents.map((a) => [a.id, a.name]))
  const agentForms = Object.entries(p.agents)
    .map(([id, a], i) => `<section class="card"><h3>${esc(names.get(id) ?? id)} <code>${esc(id)}</code></h3>
<form method="post" action="/console/policies">${csrfField(csrf)}<input type="hidden" name="agent" value="${esc(id)}">
${numInput(`a${i}-cap`, 'daily_cap', a.daily_cap, 'Daily cap <small>(credits; empty = none)</small>')}
${numInput(`a${i}-pcm`, 'per_call_max', a.per_call_max, 'Per-call maximum <small>(credits; empty = none)</small>')}
${listInput(`a${i}-allow`, 'allowlist', a.allowlist, 'Allowlist')}
<button type="submit">Save agent policy</button></form></section>`)
    .join('\n')
  return `<h2>Account</h2>
<section class="card"><form method="post" action="/console/policies">${csrfField(csrf)}
${numInput('acct-cap', 'daily_cap', p.account.daily_cap, 'Daily cap <small>(credits per HKT day, every agent together)</small>', true)}
<p class="muted">Balance cap: ${p.account.balance_cap.toLocaleString('en')} credits (set by the service owner).</p>
${listInput('acct-allow', 'allowlist', p.account.allowlist, 'Account allowlist')}
<button type="submit">Save account policy</button></form></section>
<h2>Agents</h2>
${agentForms || '<p class="muted">No active agents.</p>'}`
}
