/**
 * The OAuth consent page (docs/mcp-oauth.md): which application asks (its name escaped, its redirect
 * host), and the limits of the agent that Allow creates for it. Server-rendered, no script; Deny
 * skips the form's checks (formnovalidate) so a person can refuse without filling the budget in.
 */
import { esc } from '../../../pages/html'
import type { AuthorizationRequest } from '../../../oauth/authorize-request'
import { CONSOLE_CSP, CONSOLE_HEADERS, csrfField, flashOf, type Flash, type FormToken } from './layout'

/** What the owner typed, shown again when the service refused it. */
export interface ConsentValues {
  agent_name?: string
  budget?: string
  daily_cap?: string
  allowlist?: string
  expires_days?: string
}

export const DEFAULT_EXPIRES_DAYS = 30

export function consentPage(req: AuthorizationRequest, csrf: FormToken, opt: { values?: ConsentValues; flash?: Flash; status?: number } = {}): Response {
  const v = opt.values ?? {}
  const host = new URL(req.redirectUri).host
  const hidden = {
    response_type: 'code',
    client_id: req.client.client_id,
    redirect_uri: req.redirectUri,
    code_challenge: req.codeChallenge,
    code_challenge_method: 'S256',
    resource: req.resource,
    scope: 'mcp',
    ...(req.state !== null ? { state: req.state } : {}),
  }
  const hiddenFields = Object.entries(hidden)
    .map(([k, val]) => `<input type="hidden" name="${esc(k)}" value="${esc(val)}">`)
    .join('\n')
  const main = `<div class="signin consent">
<h1>Connect ${esc(req.client.client_name)}</h1>
${flashOf(opt.flash)}
<p><strong>${esc(req.client.client_name)}</strong> asks to use your balance through MCP. It will send you back to <strong>${esc(host)}</strong>.</p>
<p class="muted">Allowing creates an agent of your account for it, with the limits below: it can never spend more than its budget, and you can kill or revoke it on the Agents page at any time.</p>
<form method="post" action="/console/authorize">
${csrfField(csrf)}
${hiddenFields}
<label for="agent_name">Agent name</label><input id="agent_name" name="agent_name" type="text" required maxlength="64" value="${esc(v.agent_name ?? req.client.client_name.slice(0, 64))}">
<label for="budget">Budget <small>(credits it may spend in all; required)</small></label><input id="budget" name="budget" type="number" min="0" step="1" required value="${esc(v.budget ?? '')}">
<label for="daily_cap">Daily cap <small>(credits per HKT day; empty = none)</small></label><input id="daily_cap" name="daily_cap" type="number" min="0" step="1" value="${esc(v.daily_cap ?? '')}">
<label for="allowlist">Allowlist <small>(one pattern per line, e.g. <code>search.*</code>; empty = everything the account allows)</small></label><textarea id="allowlist" name="allowlist" rows="3">${esc(v.allowlist ?? '')}</textarea>
<label for="expires_days">Expires in <small>(days)</small></label><input id="expires_days" name="expires_days" type="number" min="1" max="3650" step="1" required value="${esc(v.expires_days ?? String(DEFAULT_EXPIRES_DAYS))}">
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="quiet" formnovalidate>Deny</button>
</form>
</div>`
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>Connect ${esc(req.client.client_name)} · Owner console</title>
<link rel="stylesheet" href="/console/console.css">
</head><body><main>
${main}
</main></body></html>`
  // The form's answer redirects to the client: a browser applies form-action to that redirect too.
  const csp = CONSOLE_CSP.replace("form-action 'self'", `form-action 'self' ${new URL(req.redirectUri).origin}`)
  return new Response(html, { status: opt.status ?? 200, headers: { ...CONSOLE_HEADERS, 'content-security-policy': csp } })
}
