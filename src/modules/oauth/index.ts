/**
 * OAuth 2.1 for MCP clients that connect by URL alone (docs/api.md §10a, docs/mcp-oauth.md): the
 * service is both the protected resource (/mcp) and its authorization server. Metadata (RFC 9728,
 * RFC 8414), registration (RFC 7591), the authorization endpoint (which sends the person to the
 * consent page, /console/authorize, under the console's session cookie), the token endpoint (code
 * with PKCE, refresh with rotation) and revocation (RFC 7009). The consent's Allow creates a capped
 * agent through the service POST /v1/agents uses (governance/create-agent.ts).
 * errors: OAuth's own (oauth/errors.ts) on /oauth/*; on the consent page the console's.
 */
import { Elysia } from 'elysia'
import { ApiError } from '../../errors'
import { http, type Http } from '../../http'
import { readText } from '../../edge/body'
import { checkText } from '../../edge/text'
import { hashToken } from '../../auth/tokens'
import { createAgentFor } from '../../governance/create-agent'
import { htmlPage, esc, redirect } from '../../pages/html'
import type { Services } from '../../services'
import { claimFormToken, cookieOf, formNonce, formTokens, newSigninToken, readSession, SESSION_COOKIE, signinCookie } from '../../console/session'
import { consoleErrorPage } from '../console'
import { signinPage } from '../console/pages/signin'
import { consentPage, type ConsentValues } from '../console/pages/consent'
import { MAX_REGISTRATION_BYTES, registerClient } from '../../oauth/clients'
import { OAuthError } from '../../oauth/errors'
import { checkAuthorizationRequest, clientRedirect, errorRedirect, mcpResource, type CheckedRequest } from '../../oauth/authorize-request'
import { issueCode, redeemCode, refreshGrant, revokeToken } from '../../oauth/grants'
import { CODE_VERIFIER } from '../../oauth/pkce'

/** What the token and revocation endpoints read (application/x-www-form-urlencoded, RFC 6749 §4.1.3). */
const MAX_FORM_BYTES = 8192

/** The metadata and the token endpoints are read by browser-based clients too (an MCP inspector). */
const CORS = { 'access-control-allow-origin': '*', 'access-control-allow-headers': 'authorization, content-type, mcp-protocol-version' }

export const protectedResourceMetadataUrl = (baseUrl: string) => `${baseUrl}/.well-known/oauth-protected-resource/mcp`

/** The 401 challenge of /mcp (RFC 9728 §5.1): where a client learns how to get a token. */
export const mcpChallenge = (baseUrl: string) => `Bearer resource_metadata="${protectedResourceMetadataUrl(baseUrl)}", scope="mcp"`

export const oauthRoutes = (s: Services, h: Http = http(s)) => {
  const cookie = { secure: s.cfg.BASE_URL.startsWith('https:') }

  const resourceMetadata = () =>
    Response.json(
      {
        resource: mcpResource(s.cfg.BASE_URL),
        authorization_servers: [s.cfg.BASE_URL],
        scopes_supported: ['mcp'],
        bearer_methods_supported: ['header'],
        resource_name: 'Prepaid API balance (MCP)',
        resource_documentation: `${s.cfg.BASE_URL}/llms-full.txt`,
      },
      { headers: { ...CORS, 'cache-control': 'public, max-age=3600' } },
    )

  async function readOAuthForm(request: Request): Promise<URLSearchParams> {
    let text: string
    try {
      text = await readText(request, MAX_FORM_BYTES)
    } catch {
      throw new OAuthError('invalid_request', `the body is at most ${MAX_FORM_BYTES} bytes`)
    }
    if (!(request.headers.get('content-type') ?? '').startsWith('application/x-www-form-urlencoded'))
      throw new OAuthError('invalid_request', 'send the parameters as application/x-www-form-urlencoded')
    const form = new URLSearchParams(text)
    for (const [k, v] of form) if (/[\u0000-\u001f\u007f-\u009f]/.test(v)) throw new OAuthError('invalid_request', `${k}: no control characters`)
    return form
  }

  /** An OAuth endpoint: counted per client address, its OAuthError answered as RFC 6749 §5.2 JSON. */
  const oauthEndpoint = (run: (request: Request, ip: string) => Promise<Response>) => async ({ request, server }: { request: Request; server: Parameters<Http['ip']>[1] }) => {
    try {
      await h.anonymous(request, server)
      const res = await run(request, h.ip(request, server))
      for (const [k, v] of Object.entries(CORS)) res.headers.set(k, v)
      return res
    } catch (e) {
      if (e instanceof OAuthError) {
        const res = e.toResponse()
        for (const [k, v] of Object.entries(CORS)) res.headers.set(k, v)
        return res
      }
      throw e
    }
  }

  const noStore = { 'cache-control': 'no-store', pragma: 'no-cache' }

  /** An authorization request that cannot be answered by a redirect: a page, never a redirect. */
  const refusalPage = (message: string) =>
    htmlPage(400, 'Authorization refused', `<h1 class="error">This connection request cannot be used</h1><p>${esc(message)}</p><p class="note">Nothing was shared. Go back to the application and connect again.</p>`)

  /** The consent page's query: the authorization request as it came. */
  const checkedFrom = (params: URLSearchParams) => checkAuthorizationRequest(s.ctx, (n) => params.get(n))

  const answerUnlessOk = (c: CheckedRequest): Response | null => (c.kind === 'page' ? refusalPage(c.message) : c.kind === 'redirect' ? found(c.location) : null)

  return (
    new Elysia()
      .get('/.well-known/oauth-protected-resource', resourceMetadata, { detail: { summary: 'OAuth protected resource metadata of /mcp (RFC 9728)' } })
      .get('/.well-known/oauth-protected-resource/mcp', resourceMetadata, { detail: { summary: 'OAuth protected resource metadata of /mcp (RFC 9728)' } })
      .get(
        '/.well-known/oauth-authorization-server',
        () =>
          Response.json(
            {
              issuer: s.cfg.BASE_URL,
              authorization_endpoint: `${s.cfg.BASE_URL}/oauth/authorize`,
              token_endpoint: `${s.cfg.BASE_URL}/oauth/token`,
              registration_endpoint: `${s.cfg.BASE_URL}/oauth/register`,
              revocation_endpoint: `${s.cfg.BASE_URL}/oauth/revoke`,
              response_types_supported: ['code'],
              response_modes_supported: ['query'],
              grant_types_supported: ['authorization_code', 'refresh_token'],
              code_challenge_methods_supported: ['S256'],
              token_endpoint_auth_methods_supported: ['none'],
              revocation_endpoint_auth_methods_supported: ['none'],
              scopes_supported: ['mcp'],
              authorization_response_iss_parameter_supported: true,
              client_id_metadata_document_supported: true,
              service_documentation: `${s.cfg.BASE_URL}/llms-full.txt`,
            },
            { headers: { ...CORS, 'cache-control': 'public, max-age=3600' } },
          ),
        { detail: { summary: 'OAuth authorization server metadata (RFC 8414)' } },
      )
      .post(
        '/oauth/register',
        oauthEndpoint(async (request, ip) => {
          let body: unknown
          try {
            body = JSON.parse(await readText(request, MAX_REGISTRATION_BYTES))
          } catch {
            throw new OAuthError('invalid_client_metadata', `a JSON object of client metadata, at most ${MAX_REGISTRATION_BYTES} bytes`)
          }
          const client = await registerClient(s.ctx, body, ip)
          return Response.json(
            { ...client, grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' },
            { status: 201, headers: noStore },
          )
        }),
        { parse: 'none', detail: { summary: 'OAuth dynamic client registration (RFC 7591): public clients, PKCE, https or loopback redirect URIs' } },
      )
      .get(
        '/oauth/authorize',
        async ({ request, server }) => {
          await h.anonymous(request, server)
          const url = new URL(request.url)
          const checked = await checkedFrom(url.searchParams)
          // The consent page lives under /console, where the console's session cookie is sent.
          return answerUnlessOk(checked) ?? found(`/console/authorize${url.search}`)
        },
        { detail: { summary: 'OAuth authorization endpoint: checks the request, then the consent page (sign-in first when needed)' } },
      )
      .post(
        '/oauth/token',
        oauthEndpoint(async (request) => {
          const form = await readOAuthForm(request)
          const grantType = form.get('grant_type')
          const clientId = form.get('client_id')
          if (!clientId) throw new OAuthError('invalid_request', 'client_id is required (public clients identify themselves)')
          const resource = form.get('resource') ?? ''
          if (resource !== '' && resource !== mcpResource(s.cfg.BASE_URL)) throw new OAuthError('invalid_target', `resource must be ${mcpResource(s.cfg.BASE_URL)}`)
          if (grantType === 'authorization_code') {
            const code = form.get('code')
            const verifier = form.get('code_verifier')
            const redirectUri = form.get('redirect_uri')
            if (!code || !redirectUri) throw new OAuthError('invalid_request', 'code and redirect_uri are required')
            if (!verifier || !CODE_VERIFIER.test(verifier)) throw new OAuthError('invalid_request', 'code_verifier (43–128 unreserved characters, RFC 7636) is required')
            return Response.json(await redeemCode(s.ctx, { code, clientId, redirectUri, codeVerifier: verifier, resource }), { headers: noStore })
          }
          if (grantType === 'refresh_token') {
            const refreshToken = form.get('refresh_token')
            if (!refreshToken) throw new OAuthError('invalid_request', 'refresh_token is required')
            const scope = form.get('scope')
            if (scope !== null && scope.split(' ').some((x) => x !== '' && x !== 'mcp')) throw new OAuthError('invalid_scope', 'the only scope is mcp')
            return Response.json(await refreshGrant(s.ctx, { refreshToken, clientId }), { headers: noStore })
          }
          throw new OAuthError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token')
        }),
        { parse: 'none', detail: { summary: 'OAuth token endpoint: authorization_code (PKCE S256, single use, 60 s) and refresh_token (rotated; reuse revokes the grant)' } },
      )
      .post(
        '/oauth/revoke',
        oauthEndpoint(async (request) => {
          const form = await readOAuthForm(request)
          const token = form.get('token')
          if (!token) throw new OAuthError('invalid_request', 'token is required')
          await revokeToken(s.ctx, token)
          return new Response(null, { status: 200, headers: noStore })
        }),
        { parse: 'none', detail: { summary: 'OAuth token revocation (RFC 7009): revokes the grant of an access or refresh token' } },
      )
      .options('/oauth/token', () => new Response(null, { status: 204, headers: { ...CORS, 'access-control-allow-methods': 'POST' } }), { detail: { hide: true } })
      .options('/oauth/register', () => new Response(null, { status: 204, headers: { ...CORS, 'access-control-allow-methods': 'POST' } }), { detail: { hide: true } })
      .options('/oauth/revoke', () => new Response(null, { status: 204, headers: { ...CORS, 'access-control-allow-methods': 'POST' } }), { detail: { hide: true } })
      // ---- the consent page (under /console: the session cookie's path) ----
      .get(
        '/console/authorize',
        async ({ request }) => {
          try {
            const url = new URL(request.url)
            const checked = await checkedFrom(url.searchParams)
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

/** RFC 6749's authorization responses are 302 redirects. */
function found(location: string): Response {
  return new Response(null, { status: 302, headers: { location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' } })
}
