import { esc } from '../../../pages/html'
import { csrfField, type FormToken } from './layout'

export interface WebhooksView {
  endpoint: { url: string; events: string[] | null; updated_at: string } | null
  secret?: string | null
  chat: { configured: boolean; link?: { command: string; expires_at: string } }
}

export function webhooksMain(v: WebhooksView, csrf: FormToken): string {
  const e = v.endpoint
  const secret = v.secret
    ? `<section class="notice" aria-labelledby="secret-title"><h2 id="secret-title">Signing secret</h2><p>Shown this once — store it where the receiver verifies signatures:</p><output class="token">${esc(v.secret)}</output></section>`
    : ''
  const chat = !v.chat.configured
    ? '<p class="muted">The operator chat (Telegram) is not configured on this service.</p>'
    : v.chat.link
      ? `<p>Send this to the bot within 10 minutes:</p><output class="token">${esc(v.chat.link.command)}</output>`
      : `<form method="post" action="/console/webhooks/chat-link">${csrfField(csrf)}<button type="submit">Get a chat link code</button></form>`
  return `${secret}
<h2>Webhook endpoint</h2>
<p>${e ? `Events go to <code>${esc(e.url)}</code> (${e.events ? esc(e.events.join(', ')) : 'every event'}).` : 'No endpoint yet.'}</p>
<form method="post" action="/console/webhooks">${csrfField(csrf)}
<label for="url">Endpoint URL <small>(https)</small></label><input id="url" name="url" type="url" required value="${esc(e?.url ?? '')}">
<button type="submit">Save endpoint</button></form>
${e ? `<form method="post" action="/console/webhooks/delete">${csrfField(csrf)}<button type="submit" class="quiet">Remove endpoint</button></form>` : ''}
<h2>Operator chat</h2>
${chat}`
}
