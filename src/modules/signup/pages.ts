/** The token-recovery page (/rotate?code=...): the new owner token, shown once. */
import { ApiError } from '../../errors'
import { errorPage, esc, htmlPage } from '../../lib/html'

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
