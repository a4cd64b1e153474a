import type { AgentView } from '../../../governance/agents'
import { esc } from '../../../pages/html'
import { actionButton, csrfField, type FormToken } from './layout'
import { raisedNote } from './raised'

/** Sub-agents (docs/api.md §8) add these; the page nests agents when they are present. */
type TreeAgent = AgentView & { parent_id?: string | null; budget?: number | null; spent_total?: number | null; depth?: number }

const n = (v: number | null | undefined) => (v === null || v === undefined ? '—' : v.toLocaleString('en'))

function row(a: TreeAgent, csrf: FormToken, children: string): string {
  const base = `/console/agents/${encodeURIComponent(a.id)}`
  const buttons = [
    a.state === 'active' ? actionButton(`${base}/kill`, csrf, 'Kill', 'danger') : '',
    a.state === 'killed' ? actionButton(`${base}/revive`, csrf, 'Revive') : '',
    a.state !== 'revoked' ? actionButton(`${base}/revoke`, csrf, 'Revoke', 'quiet') : '',
  ].join('')
  const budget = a.budget !== undefined ? ` · budget ${n(a.budget)}${a.spent_total !== undefined ? `, spent ${n(a.spent_total)}` : ''}` : ''
  return `<li class="agent" data-agent="${esc(a.id)}">
<h3>${esc(a.name)} <span class="state-${esc(a.state)}">${esc(a.state)}${a.kill_reason ? ` (${esc(a.kill_reason)})` : ''}</span></h3>
<div class="muted"><code>${esc(a.id)}</code></div>
${a.oauth_client ? `<div>OAuth client: <strong>${esc(a.oauth_client)}</strong> <span class="muted">(connected by URL; Revoke disconnects it)</span></div>` : ''}
<div>spent today ${n(a.spent_today)} · daily cap ${n(a.daily_cap)} · per call ${n(a.per_call_max)}${budget}</div>
${raisedNote(a.raised)}
<div>${buttons}</div>
${children}
</li>`
}

/** The agents as a tree when they carry `parent_id`, else a flat list (oldest first). */
export function agentTree(agents: TreeAgent[], csrf: FormToken): string {
  if (!agents.length) return '<p class="muted">No agents yet. Create one below; its token is shown once.</p>'
  const ids = new Set(agents.map((a) => a.id))
  const children = new Map<string | null, TreeAgent[]>()
  for (const a of agents) {
    const parent = a.parent_id && ids.has(a.parent_id) ? a.parent_id : null
    children.set(parent, [...(children.get(parent) ?? []), a])
  }
  const list = (parent: string | null): string => {
    const kids = children.get(parent)
    return kids ? `<ul class="tree">${kids.map((a) => row(a, csrf, list(a.id))).join('')}</ul>` : ''
  }
  return list(null)
}

export function agentsMain(agents: AgentView[], csrf: FormToken, created?: { name: string; token: string }, runs = ''): string {
  const shown = created
    ? `<section class="notice" aria-labelledby="created-title"><h2 id="created-title">Agent “${esc(created.name)}” created</h2>
<p>Its token, shown this once — copy it now:</p><output class="token">${esc(created.token)}</output></section>`
    : ''
  return `${shown}
${agentTree(agents, csrf)}
${runs}
<h2>Create an agent</h2>
<form method="post" action="/console/agents">
${csrfField(csrf)}
<label for="name">Name</label><input id="name" name="name" type="text" required maxlength="64">
<label for="daily_cap">Daily cap <small>(credits per HKT day; empty = none)</small></label><input id="daily_cap" name="daily_cap" type="number" min="0" step="1">
<label for="per_call_max">Per-call maximum <small>(credits; empty = none)</small></label><input id="per_call_max" name="per_call_max" type="number" min="0" step="1">
<label for="allowlist">Allowlist <small>(one pattern per line, e.g. <code>search.*</code>; empty = everything the account allows)</small></label><textarea id="allowlist" name="allowlist" rows="3"></textarea>
<button type="submit">Create</button>
</form>`
}
