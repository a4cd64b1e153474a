import type { KeySummary } from '../../../vault/store'
import { esc } from '../../../pages/html'
import { csrfField, type FormToken } from './layout'

export function keysMain(v: { configured: boolean; keys: KeySummary[]; providers: string[]; link?: { url: string; provider: string; expires_at: string } }, csrf: FormToken): string {
  if (!v.configured) return '<p class="muted">The key vault is not configured on this service (VAULT_MASTER_KEY), so provider keys cannot be stored.</p>'
  const rows = v.keys
    .map((k) => `<tr><td><code>${esc(k.provider)}</code></td><td class="mono">…${esc(k.last4)}</td><td><time datetime="${esc(k.created_at)}">${esc(k.created_at.slice(0, 10))}</time></td></tr>`)
    .join('')
  const link = v.link
    ? `<section class="notice" aria-labelledby="link-title"><h2 id="link-title">Vault link for ${esc(v.link.provider)}</h2>
<p>Open it (or send it to whoever holds the key) within 10 minutes; it works once:</p><p><a class="token" href="${esc(v.link.url)}">${esc(v.link.url)}</a></p></section>`
    : ''
  return `${link}
<h2>Vaulted provider keys</h2>
${v.keys.length ? `<div class="table-wrap"><table><thead><tr><th scope="col">Provider</th><th scope="col">Key</th><th scope="col">Stored</th></tr></thead><tbody>${rows}</tbody></table></div>` : '<p class="muted">No provider keys yet: calls use the house keys.</p>'}
<h2>New vault link</h2>
<form method="post" action="/console/keys/link">${csrfField(csrf)}
<label for="provider">Provider</label><select id="provider" name="provider">${v.providers.map((p) => `<option value="${esc(p)}">${esc(p)}</option>`).join('')}</select>
<button type="submit">Create vault link</button></form>`
}
