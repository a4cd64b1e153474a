import type { AgentView } from '../../../governance/agents'
import type { CallRecord } from '../../../paid-request/calls'
import { esc } from '../../../pages/html'

export interface ActivityPageView {
  calls: CallRecord[]
  next_cursor: string | null
  filter: { agent?: string; route?: string; outcome?: string }
  agents: AgentView[]
}

export function activityMain(v: ActivityPageView): string {
  const names = new Map(v.agents.map((a) => [a.id, a.name]))
  const opt = (value: string, label: string, current?: string) => `<option value="${esc(value)}"${value === (current ?? '') ? ' selected' : ''}>${esc(label)}</option>`
  const rows = v.calls
    .map(
      (c) => `<tr><td><time datetime="${esc(c.at)}">${esc(c.at.replace('T', ' ').slice(0, 19))}</time></td><td><code>${esc(c.slug)}</code></td>
<td>${c.agent_id ? esc(names.get(c.agent_id) ?? c.agent_id) : 'Owner token'}</td><td>${esc(c.outcome)}${c.refunded ? ' <small>(refunded)</small>' : ''}</td>
<td class="num">${c.charged}</td><td class="num">${c.http_status ?? '—'}</td><td class="num">${c.latency_ms}</td></tr>`,
    )
    .join('\n')
  const keep = new URLSearchParams(Object.entries(v.filter).filter(([, x]) => x) as [string, string][])
  const next = v.next_cursor ? `<p><a href="/console/activity?${esc(new URLSearchParams([...keep, ['cursor', v.next_cursor]]).toString())}" rel="next">Older calls</a></p>` : ''
  return `<form method="get" action="/console/activity" class="filters">
<div><label for="f-agent">Agent</label><select id="f-agent" name="agent">${opt('', 'Any', v.filter.agent)}${opt('_owner', 'Owner token', v.filter.agent)}${v.agents.map((a) => opt(a.id, a.name, v.filter.agent)).join('')}</select></div>
<div><label for="f-route">Route or slug</label><input id="f-route" name="route" type="text" value="${esc(v.filter.route ?? '')}" placeholder="proxy:openai or search.web"></div>
<div><label for="f-outcome">Outcome</label><input id="f-outcome" name="outcome" type="text" value="${esc(v.filter.outcome ?? '')}" placeholder="ok, provider_error, timeout…"></div>
<div><button type="submit">Filter</button></div>
</form>
${v.calls.length ? `<div class="table-wrap"><table><thead><tr><th scope="col">At (UTC)</th><th scope="col">Route / slug</th><th scope="col">Agent</th><th scope="col">Outcome</th><th scope="col" class="num">Charged</th><th scope="col" class="num">HTTP</th><th scope="col" class="num">ms</th></tr></thead><tbody>
${rows}
</tbody></table></div>` : '<p class="muted">No calls match.</p>'}
${next}`
}
