/**
 * The OAuth consent page (docs/mcp-oauth.md), under /console where the console's session cookie is
 * sent: without a session, the console's sign-in, which comes back here; with one, the client's
 * request and the form of the agent Allow creates (through the service POST /v1/agents uses,
 * governance/create-agent.ts), which redirects with a one-time code; Deny redirects with
 * access_denied. Each rendered form acts once (console/session.ts).
 * errors (as pages): an unknown client or redirect (oauth/authorize-request.ts), FORBIDDEN (a form
 *         without its token), 409 (a form posted again), what create-agent refuses (on the form).
 */
import { Elysia } from 'elysia'
import { ApiError } from '../../errors'
import { readText } from '../../edge/body'
import { checkText } from '../../edge/text'
import { hashToken } from '../../auth/tokens'
import { createAgentFor } from '../../governance/create-agent'
import { redirect } from '../../pages/html'
import type { Services } from '../../services'
import { claimFormToken, cookieOf, formNonce, formTokens, newSigninToken, readSession, SESSION_COOKIE, signinCookie } from '../../auth/console-session'
import { answerUnlessOk, checkAuthorizationRequest, clientRedirect, errorRedirect } from '../../oauth/authorize-request'
import { issueCode } from '../../oauth/grants'
import { consoleErrorPage } from './index'
import { signinPage } from './pages/signin'
import { consentPage, type ConsentValues } from './pages/consent'

export const authorizeRoutes = (s: Services) => {
  const cookie = { secure: s.cfg.BASE_URL.startsWith('https:') }
  return new Elysia()
      .get(
        '/console/authorize',
        async ({ request }) => {
          try {
            const url = new URL(request.url)
            const checked = await checkAuthorizationRequest(s.ctx, (n) => url.searchParams.get(n))
            const early = answerUnlessOk(checked)
            if (early || checked.kind !== 'ok') return early!
            const sess = await readSession(s.ctx, cookieOf(request, SESSION_COOKIE))
            if (!sess) {
              const csrf = newSigninToken()
              return signinPage(csrf, { setCookie: signinCookie(csrf, cookie), next: `/console/authorize${url.search}` })
            }
            return consentPage(checked.request, formTokens(sess))
          } catch (e) {
            if (e instanceof ApiError) return consoleErrorPage(e)
            throw e
          }
        },
        { detail: { summary: 'HTML: the OAuth consent page (Allow creates a capped agent for the MCP client)' } },
      )
      .post(
        '/console/authorize',
        async ({ request }) => {
          try {
            const form = await readConsentForm(request)
            const checked = await checkAuthorizationRequest(s.ctx, (n) => form.get(n))
            const early = answerUnlessOk(checked)
            if (early || checked.kind !== 'ok') return early!
            const req = checked.request
            const sess = await readSession(s.ctx, cookieOf(request, SESSION_COOKIE))
            if (!sess) return redirect('/console/sign-in')
            const nonce = formNonce(sess, form.get('csrf') ?? undefined)
            if (!nonce) throw new ApiError('FORBIDDEN', { role: 'console form that carries its own CSRF token: reload the page and submit again' })
            if (!(await claimFormToken(s.ctx, sess, nonce)))
              return consentPage(req, formTokens(sess), { status: 409, flash: { error: 'Already submitted: this form acts once. Go back to the application and connect again if it did not connect.' } })
            if (form.get('decision') !== 'allow')
              return redirect(errorRedirect(req.redirectUri, s.cfg.BASE_URL, 'access_denied', 'the owner denied the request', req.state))
            const values: ConsentValues = Object.fromEntries(['agent_name', 'budget', 'daily_cap', 'allowlist', 'expires_days'].map((k) => [k, form.get(k) ?? '']))
            try {
              const budget = wholeNumber(values.budget, 'budget', true)!
              const days = wholeNumber(values.expires_days, 'expires_days', true)!
              if (days < 1 || days > 3650) throw new ApiError('BAD_REQUEST', { field: 'expires_days', expected: 'a whole number of days, 1 to 3650' })
              const allowlist = (values.allowlist ?? '').split('\n').map((l) => l.trim()).filter(Boolean)
              const agent = await createAgentFor(s.ctx, sess.accountId, {
                name: (values.agent_name ?? '').trim(),
                budget,
                daily_cap: wholeNumber(values.daily_cap, 'daily_cap', false),
                allowlist: allowlist.length ? allowlist : null,
                ttl_s: days * 86400,
              })
              // Shown in GET /v1/agents and the console: which client this agent is.
              await s.ctx.redis.hset(s.ctx.keys.agent(sess.accountId, agent.id), 'oauth_client', req.client.client_name)
              const code = await issueCode(s.ctx, {
                accountId: sess.accountId,
                clientId: req.client.client_id,
                redirectUri: req.redirectUri,
                codeChallenge: req.codeChallenge,
                resource: req.resource,
                agentId: agent.id,
                agentTokenHash: hashToken(agent.token),
              })
              return redirect(clientRedirect(req.redirectUri, { code, state: req.state, iss: s.cfg.BASE_URL }))
            } catch (e) {
              if (!(e instanceof ApiError) || e.status >= 500) throw e
              return consentPage(req, formTokens(sess), { values, status: e.status, flash: { error: `${e.code}: ${String(e.body().message)}` } })
            }
          } catch (e) {
            if (e instanceof ApiError) return consoleErrorPage(e)
            throw e
          }
        },
        { parse: 'none', detail: { summary: 'HTML form post: Allow (creates the capped agent, redirects with a code) or Deny (access_denied)' } },
      )

  async function readConsentForm(request: Request): Promise<URLSearchParams> {
    const form = new URLSearchParams(await readText(request, s.cfg.MAX_BODY_BYTES))
    const fields: Record<string, string> = {}
    for (const [k, v] of form) fields[k] = k === 'allowlist' ? v.replace(/\r\n?/g, '\n') : v
    checkText(fields, new Set(['allowlist']))
    return new URLSearchParams(fields)
  }
}

function wholeNumber(raw: string | undefined, field: string, required: boolean): number | null {
  const v = (raw ?? '').trim()
  if (v === '' && !required) return null
  if (!/^\d{1,15}$/.test(v)) throw new ApiError('BAD_REQUEST', { field, expected: required ? 'a whole number' : 'a whole number, or empty' })
  return Number(v)
}

