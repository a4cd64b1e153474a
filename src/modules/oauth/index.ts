/**
 * OAuth 2.1 for MCP clients that connect by URL alone (docs/api.md §10a, docs/mcp-oauth.md): the
 * service is both the protected resource (/mcp) and its authorization server. Metadata (RFC 9728,
 * RFC 8414), registration (RFC 7591), the authorization endpoint (which checks the request and
 * sends the person to the consent page, /console/authorize in modules/console/authorize.ts, where
 * the console's session cookie is sent), the token endpoint (code with PKCE, refresh with
 * rotation) and revocation (RFC 7009).
 * errors: OAuth's own (oauth/errors.ts).
 */
import { Elysia } from 'elysia'
import { http, type Http } from '../../http'
import { readText } from '../../edge/body'
import type { Services } from '../../services'
import { MAX_REGISTRATION_BYTES, registerClient } from '../../oauth/clients'
import { OAuthError } from '../../oauth/errors'
import { answerUnlessOk, checkAuthorizationRequest, found, mcpResource } from '../../oauth/authorize-request'
import { redeemCode, refreshGrant, revokeToken } from '../../oauth/grants'
import { CODE_VERIFIER } from '../../oauth/pkce'

/** What the token and revocation endpoints read (application/x-www-form-urlencoded, RFC 6749 §4.1.3). */
const MAX_FORM_BYTES = 8192

/** The metadata and the token endpoints are read by browser-based clients too (an MCP inspector). */
const CORS = { 'access-control-allow-origin': '*', 'access-control-allow-headers': 'authorization, content-type, mcp-protocol-version' }

export const oauthRoutes = (s: Services, h: Http = http(s)) => {
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
          const checked = await checkAuthorizationRequest(s.ctx, (n) => url.searchParams.get(n))
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
  )
}

