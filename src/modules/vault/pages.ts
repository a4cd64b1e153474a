/**
 * The vault pages a human opens from a link an agent relayed. Plain server-rendered HTML: no
 * script, no external asset, a CSP that forbids both, and no Referer (the URL is the secret).
 */
import { ApiError, type ErrorCode } from '../../errors'
import type { LinkView } from '../../vault/account-keys'
import { PAGE_HEADERS as SHARED_PAGE_HEADERS } from '../../pages/html'

/** The pages' headers (pages/html.ts), with a CSP whose forms post here only (no Stripe). */
export const PAGE_HEADERS: Record<string, string> = {
  ...SHARED_PAGE_HEADERS,
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
}

export function formPage(code: string, v: LinkView): Response {
  const provider = esc(v.provider)
  return page(
    200,
    `Add your ${provider} key`,
    `<h1>Add your ${provider} key</h1>
<p>For the account <strong>${esc(v.email)}</strong>. Paste one ${provider} API key below.</p>
<form method="post" action="/vault/${esc(code)}">
<label for="key">${provider} API key</label>
<input id="key" name="key" type="password" autocomplete="off" spellcheck="false" required minlength="8" maxlength="4096">
<button type="submit">Store key</button>
</form>
<p class="note">The key is encrypted before it is stored; only its last 4 characters are ever shown again.
This link works once and expires at ${esc(new Date(v.expiresAt).toISOString().replace('T', ' ').slice(0, 16))} UTC.</p>`,
  )
}

export function storedPage(s: { provider: string; last4: string; email: string }): Response {
  return page(
    200,
    'Key stored',
    `<h1>Key stored</h1>
<p>Your ${esc(s.provider)} key ending in <strong class="last4">${esc(s.last4)}</strong> is saved for <strong>${esc(s.email)}</strong>.</p>
<p class="note">You can close this page. The link is used up; to replace the key later, ask your agent for a new link.</p>`,
  )
}

export function errorPage(e: ApiError): Response {
  const body = e.body()
  return page(
    e.status,
    String(e.code),
    `<h1 class="error">${esc(e.code as ErrorCode)}</h1>
<p>${esc(String(body.message))}</p>`,
  )
}

function page(status: number, title: string, main: string): Response {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${title}</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b}
h1{font-size:1.4rem}h1.error{color:#a40000;font-family:ui-monospace,monospace}
label{display:block;font-weight:600;margin:1rem 0 .3rem}
input{width:100%;box-sizing:border-box;padding:.5rem;font:inherit;font-family:ui-monospace,monospace}
button{margin-top:1rem;padding:.5rem 1.2rem;font:inherit}.note{color:#555;font-size:.9rem}
</style></head><body><main>
${main}
</main></body></html>`
  return new Response(html, { status, headers: PAGE_HEADERS })
}

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}
