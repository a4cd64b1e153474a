/**
 * An MCP client's OAuth flow by hand, through app.handle (docs/mcp-oauth.md): register, authorize,
 * the owner's consent in the console, the code exchanged. The browser test drives the same with the
 * official SDK and Chromium.
 */
import { randomBytes } from 'node:crypto'
import { s256Challenge } from '../../src/oauth/pkce'
import { ConsoleClient, formOf } from './console'
import type { TestApp } from './harness'

export const REDIRECT = 'http://127.0.0.1:9/callback'

export async function raw(t: TestApp, method: string, path: string, init: { form?: Record<string, string>; json?: unknown; headers?: Record<string, string> } = {}): Promise<Response> {
  const headers: Record<string, string> = { ...(init.headers ?? {}) }
  let body: string | undefined
  if (init.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded'
    body = new URLSearchParams(init.form).toString()
  } else if (init.json !== undefined) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(init.json)
  }
  return t.app.handle(new Request(`http://pab.test${path}`, { method, headers, body }))
}

export async function registerClient(t: TestApp, meta: Record<string, unknown> = {}): Promise<{ client_id: string; client_name: string }> {
  const res = await raw(t, 'POST', '/oauth/register', { json: { client_name: 'Test Chat', redirect_uris: [REDIRECT], ...meta } })
  if (res.status !== 201) throw new Error(`register: ${res.status} ${await res.text()}`)
  return (await res.json()) as { client_id: string; client_name: string }
}

export function pkce() {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: s256Challenge(verifier) }
}

export function authorizeQuery(t: TestApp, clientId: string, challenge: string, extra: Record<string, string> = {}): string {
  return new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'st-123',
    resource: `${t.s.cfg.BASE_URL}/mcp`,
    scope: 'mcp',
    ...extra,
  }).toString()
}

/** The owner signs in and answers the consent page; the redirect's Location. */
export async function consent(t: TestApp, ownerToken: string, query: string, decision: 'allow' | 'deny', limits: Record<string, string> = { budget: '12' }): Promise<URL> {
  const c = new ConsoleClient(t)
  await c.signIn(ownerToken)
  const page = await c.get(`/console/authorize?${query}`)
  if (page.status !== 200) throw new Error(`consent page: ${page.status} ${page.text.slice(0, 300)}`)
  const res = await c.post('/console/authorize', { ...formOf(page.text, 'value="allow"'), ...limits, decision })
  if (res.status !== 303) throw new Error(`consent: ${res.status} ${res.text.slice(0, 500)}`)
  return new URL(res.headers.get('location')!)
}

/** Register, consent (Allow), exchange: a client's tokens. */
export async function connectClient(t: TestApp, ownerToken: string, limits: Record<string, string> = { budget: '12' }) {
  const client = await registerClient(t)
  const { verifier, challenge } = pkce()
  const back = await consent(t, ownerToken, authorizeQuery(t, client.client_id, challenge), 'allow', limits)
  const code = back.searchParams.get('code')!
  return { client, verifier, challenge, code, back }
}

export async function exchange(t: TestApp, p: { code: string; clientId: string; verifier: string; redirectUri?: string; resource?: string }): Promise<Response> {
  return raw(t, 'POST', '/oauth/token', {
    form: {
      grant_type: 'authorization_code',
      code: p.code,
      client_id: p.clientId,
      code_verifier: p.verifier,
      redirect_uri: p.redirectUri ?? REDIRECT,
      resource: p.resource ?? `${t.s.cfg.BASE_URL}/mcp`,
    },
  })
}

export async function refresh(t: TestApp, clientId: string, refreshToken: string): Promise<Response> {
  return raw(t, 'POST', '/oauth/token', { form: { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId } })
}

/** An MCP tools/list with a bearer, as JSON-RPC over app.handle. */
export async function mcpList(t: TestApp, bearer: string): Promise<Response> {
  return raw(t, 'POST', '/mcp', {
    json: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
    headers: { authorization: `Bearer ${bearer}`, accept: 'application/json, text/event-stream' },
  })
}
