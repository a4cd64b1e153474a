import type { AgentView } from '../../../governance/agents'
import { esc } from '../../../pages/html'
import { csrfField, type FormToken } from './layout'
import type { RaisedView } from '../../../governance/raises'
import { raisedNote } from './raised'

interface AccountPolicy {
  daily_cap: number
  balance_cap: number
  allowlist: string[] | null
  thresholds: number[]
  raised?: RaisedView
}
interface AgentPolicy {
  daily_cap: number | null
  allowlist: string[] | null
  per_call_max: number | null
  raised?: RaisedView
}

/**
 * The daily cap as the form shows it, and carries back (CAP_SHOWN_FIELD): saved unchanged, it is
 * not sent, so saving another field leaves a temporary raise of the cap to lapse (docs/api.md §13b).
 */
export const CAP_SHOWN_FIELD = 'daily_cap_shown'
const capShown = (v: number | null) => `<input type="hidden" name="${CAP_SHOWN_FIELD}" value="${v ?? ''}">`

const numInput = (id: string, name: string, value: number | null, label: string, required = false) =>
  `<label for="${id}">${label}</label><input id="${id}" name="${name}" type="number" min="0" step="1" value="${value ?? ''}"${required ? ' required' : ''}>`
/**
 * The allowlist as the form shows and carries it. In a text box `null` (no allowlist: everything
 * allowed) and `[]` (allow nothing) look the same, so the page says which holds, the "No allowlist"
 * box chooses between them, and the form carries the state it showed (SHOWN_FIELD): the handler
 * changes the allowlist only when what comes back differs from what was shown.
 */
export const SHOWN_FIELD = 'allowlist_shown'
export const ALLOW_ALL_FIELD = 'allow_all'
export const ALLOW_ALL_LABEL = 'No allowlist (allow everything)'
/** The one encoding of a shown allowlist, written by the page and compared by the handler. */
export const shownAllowlist = (list: string[] | null): string => JSON.stringify(list)

function allowlistState(list: string[] | null): string {
  if (list === null) return '<strong>No allowlist</strong>: every route is allowed.'
  if (list.length === 0) return '<strong>Allows nothing</strong> (an empty allowlist): every call is refused.'
  return `<strong>${list.length} pattern${list.length === 1 ? '' : 's'}</strong>: only what they match is allowed.`
}

const listInput = (id: string, list: string[] | null, label: string) => `<fieldset class="allowlist"><legend>${label}</legend>
<p class="allow-state" data-allowlist="${list === null ? 'none' : list.length ? 'patterns' : 'nothing'}">${allowlistState(list)}</p>
<input type="hidden" name="${SHOWN_FIELD}" value="${esc(shownAllowlist(list))}">
<label class="check" for="${id}-all"><input id="${id}-all" name="${ALLOW_ALL_FIELD}" type="checkbox" value="1"${list === null ? ' checked' : ''}> ${ALLOW_ALL_LABEL}</label>
<label for="${id}">Allowlist patterns <small>(one per line; with the box unticked, none listed = allow nothing)</small></label><textarea id="${id}" name="allowlist" rows="3">${esc((list ?? []).join('\n'))}</textarea></fieldset>`

/** The warning levels as the form shows them and reads them back (docs/api.md §13a). */
export const THRESHOLDS_FIELD = 'thresholds'
export const THRESHOLDS_SHOWN_FIELD = 'thresholds_shown'
export const shownThresholds = (levels: readonly number[]): string => levels.join(', ')

const thresholdsInput = (levels: number[]) => `<fieldset class="thresholds"><legend>Warning levels</legend>
<p class="thresholds-state" data-thresholds="${esc(levels.join(','))}">${
  levels.length
    ? `A <code>cap.threshold</code> event (webhook and chat) when spend reaches <strong>${levels.map((l) => `${l}%`).join(', ')}</strong> of the account's or an agent's daily cap, or of an agent's budget: once per level per day (per lifetime for a budget).`
    : '<strong>Off</strong>: no warnings before a cap is reached.'
}</p>
<input type="hidden" name="${THRESHOLDS_SHOWN_FIELD}" value="${esc(shownThresholds(levels))}">
<label for="acct-thresholds">Warning levels <small>(percentages 1–100, separated by commas; empty = off)</small></label><input id="acct-thresholds" name="${THRESHOLDS_FIELD}" type="text" value="${esc(shownThresholds(levels))}"></fieldset>`

export function policiesMain(p: { account: AccountPolicy; agents: Record<string, AgentPolicy> }, agents: AgentView[], csrf: FormToken): string {
  const names = new Map(agents.map((a) => [a.id, a.name]))
  const agentForms = Object.entries(p.agents)
    .map(([id, a], i) => `<section class="card"><h3>${esc(names.get(id) ?? id)} <code>${esc(id)}</code></h3>
<form method="post" action="/console/policies">${csrfField(csrf)}<input type="hidden" name="agent" value="${esc(id)}">
${raisedNote(a.raised)}
${numInput(`a${i}-cap`, 'daily_cap', a.daily_cap, 'Daily cap <small>(credits; empty = none)</small>')}${capShown(a.daily_cap)}
${numInput(`a${i}-pcm`, 'per_call_max', a.per_call_max, 'Per-call maximum <small>(credits; empty = none)</small>')}
${listInput(`a${i}-allow`, a.allowlist, 'Allowlist')}
<button type="submit">Save agent policy</button></form></section>`)
    .join('\n')
  return `<h2>Account</h2>
<section class="card"><form method="post" action="/console/policies">${csrfField(csrf)}
${raisedNote(p.account.raised)}
${numInput('acct-cap', 'daily_cap', p.account.daily_cap, 'Daily cap <small>(credits per HKT day, every agent together)</small>', true)}${capShown(p.account.daily_cap)}
<p class="muted">Balance cap: ${p.account.balance_cap.toLocaleString('en')} credits (set by the service owner).</p>
${listInput('acct-allow', p.account.allowlist, 'Account allowlist')}
${thresholdsInput(p.account.thresholds)}
<button type="submit">Save account policy</button></form></section>
<h2>Agents</h2>
${agentForms || '<p class="muted">No active agents.</p>'}`
}
