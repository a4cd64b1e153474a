/** The token-recovery pages: /rotate?code=... asks to confirm; its POST shows the new owner token once. */
import { ApiError } from '../../errors'
import { errorPage, esc, htmlPage } from '../../pages/html'

/** A plain form, no JavaScript: the rotation waits for a person's click, not a scanner's GET. */
export function confirmRotatePage(email: string, code: string): Response {
  return htmlPage(
    200,
    'Replace your owner token',
    `<h1>Replace your owner token</h1>
<p>For <strong>${esc(email)}</strong>. The button below issues a new owner token and shows it once; the old token stops working at that moment.</p>
<form method="post" action="/rotate">
<input type="hidden" name="code" value="${esc(code)}">
<button type="submit">Replace my owner token</button>
</form>
<p class="note">If you did not ask for this, close this page: nothing changes until the button is pressed.</p>`,
  )
}

export function newTokenPage(email: string, token: string): Response {
  return htmlPage(
    200,
    'Your new owner token',
    `<h1>Your new owner token</h1>
<p>For <strong>${esc(email)}</strong>. Copy it now: it is shown only this once.</p>
<code class="token" id="token">${esc(token)}</code>
<p>The old token no longer works. Give the new one to your agent (it is its <code>Authorization: Bearer</code> token).</p>
<p class="note">Keep it secret. If it is lost again, ask for another link with POST /v1/token/rotate and your e-mail.</p>`,
  )
}

const LINK_TEXT: Partial<Record<string, string>> = {
  LINK_INVALID: 'This link is malformed or expired (links work for 10 minutes). Ask for a new one: POST /v1/token/rotate with {"email": "..."}.',
  LINK_USED: 'This link was already used; links work once. If you did not get the token, ask for a new link: POST /v1/token/rotate with {"email": "..."}.',
}

export function recoveryErrorPage(e: ApiError): Response {
  return errorPage(e, LINK_TEXT[e.code])
}
