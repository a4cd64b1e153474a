import type { AgentView } from '../../../governance/agents'
import type { RunView } from '../../../ledger/runs'
import { esc } from '../../../pages/html'

/**
 * The account's run budgets (docs/api.md §13c) on the Agents page: each run's agent, what it spent
 * of its max, when it ends (or ended, and what it left unspent).
 */
export function runsSection(runs: RunView[], agents: AgentView[]): string {
  const names = new Map(agents.map((a) => [a.id, a.name]))
  const head = '<h2 id="runs">Run budgets</h2>'
  if (!runs.length) return `${head}<p class="muted">No runs. An agent opens one by sending <code>X-Budget-Run: &lt;run id&gt;; max=&lt;credits&gt;; ttl=&lt;seconds&gt;</code> with a paid call.</p>`
  const rows = runs
    .map(
      (r) => `<tr data-run="${esc(r.id)}"><td><code>${esc(r.id)}</code></td><td>${esc(names.get(r.agent_id) ?? r.agent_id)}</td>
<td>${r.spent.toLocaleString('en')} of ${r.max.toLocaleString('en')}</td><td>${esc(r.state)}</td>
<td>${r.state === 'open' ? `ends ${esc(r.expires_at)}` : `ended ${esc(r.expires_at)}; ${(r.released ?? 0).toLocaleString('en')} unspent`}</td></tr>`,
    )
    .join('')
  return `${head}<table class="runs"><thead><tr><th>Run</th><th>Agent</th><th>Spent</th><th>State</th><th>End</th></tr></thead><tbody>${rows}</tbody></table>`
}
