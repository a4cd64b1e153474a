import { esc } from '../../../pages/html'
import { barePage } from './layout'

/**
 * A page to come back to after signing in (`next`): only the OAuth consent page
 * (docs/mcp-oauth.md), so the form can never send a signed-in owner elsewhere.
 */
export function safeNext(next: string | undefined): string | null {
  return next && next.startsWith('/console/authorize?') && !/[\\\s]/.test(next) ? next : null
}

/** The sign-in form: the owner token (never an agent token), with the sign-in CSRF token. */
export function signinPage(csrf: string, opt: { error?: string; status?: number; setCookie: string; next?: string | null }): Response {
  const next = safeNext(opt.next ?? undefined)
  const main = `<div class="signin">
<h1>Owner console</h1>
${next ? '<p>An application asks to connect to your balance: sign in to review its request.</p>\n' : ''}<p class="muted">Sign in with your account's owner token (<code>sk_…</code>). Agent tokens cannot sign in.</p>
${opt.error ? `<p class="notice error" role="alert">${esc(opt.error)}</p>` : ''}
<form method="post" action="/console/sign-in">
<input type="hidden" name="csrf" value="${esc(csrf)}">
${next ? `<input type="hidden" name="next" value="${esc(next)}">` : ''}
<label for="token">Owner token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required spellcheck="false" class="mono">
<button type="submit">Sign in</button>
</form>
<p class="muted"><small>Lost it? <code>POST /v1/token/rotate</code> with your e-mail sends a replacement link. The session lasts 12 hours and ends when the owner token is replaced.</small></p>
</div>`
  return barePage('Sign in', main, opt.status ?? 200, { 'set-cookie': opt.setCookie })
}
