import { Elysia } from 'elysia'
import { ApiError } from '../../errors'
import { bearerAuth, http, type Http } from '../../http'
import type { Services } from '../../services'
import { readText } from '../../edge/body'
import { refusalAfterAdmission } from '../../auth/refusal-after-admission'
import { requestId } from '../../observe'
import { McpEndpoint, type McpCaller } from '../../mcp/endpoint'
import { admittedByTool } from '../../mcp/tool-admission'
import { originPolicy, refuseForeignOrigin } from '../../mcp/origin'
import type { RouteLike } from '../../route-table'
import type { Principal } from '../../auth/principal'
import { resolveAccessToken } from '../../oauth/grants'
import { mcpChallenge } from '../../oauth/authorize-request'

type Ctx = { bearer: string | undefined; request: Request; server: Parameters<Http['ip']>[1] }

/**
 * `/mcp` (docs/api.md §10). The bearer is the REST API's, or an OAuth access token issued for this
 * endpoint (docs/mcp-oauth.md), which acts as the agent its consent created: none or a bad one →
 * 401 UNAUTHORIZED with the challenge that names the protected resource metadata (RFC 9728),
 * counted per client address. A tool call is admitted by its tool, where the adapted route admits it (a paid
 * call inside its debit, counted once); every other request (initialize, tools/list, notifications,
 * a tools/call that never reaches a tool: mcp/tool-admission.ts) is admitted here as any REST request
 * is, so a killed or revoked token is refused the same way and every request counts.
 * Before all of it, a foreign Origin (or, on a loopback BASE_URL, a foreign Host) → 403 (mcp/origin.ts).
 */
export const mcpRoutes = (s: Services, routes: () => RouteLike[], h: Http = http(s)) => {
  const endpoint = new McpEndpoint(s, routes)
  const origins = originPolicy(s.cfg)
  const resolve = async ({ bearer, request, server }: Ctx): Promise<Principal> => {
    const principal = (await s.guard.tokens.resolve(bearer)) ?? (await resolveAccessToken(s.ctx, bearer))
    if (principal) return principal
    await h.anonymous(request, server)
    throw new ApiError('UNAUTHORIZED', {}, { 'www-authenticate': mcpChallenge(s.cfg.BASE_URL) })
  }
  // Admitted by the principal, not the bearer: an OAuth access token is known here only.
  const admit = async (principal: Principal, access: 'member' | 'operator') => {
    if (access === 'operator' && principal.agentId !== null) {
      await s.guard.admitPrincipal(principal)
      throw new ApiError('FORBIDDEN', { role: 'account operator (owner token)' })
    }
    return s.guard.admitPrincipal(principal)
  }
  return new Elysia()
    .use(bearerAuth)
    .onBeforeHandle(({ request }) => refuseForeignOrigin(request, origins))
    .post(
      '/mcp',
      async (c) => {
        const { request } = c
        const principal = await resolve(c)
        const headers: Record<string, string> = {}
        // A chunked body refused past MAX_BODY_BYTES as it is read: answered after the admission,
        // as REST's refusals before their handler are (src/admission.ts), so it counts.
        const text = await refusalAfterAdmission(s, principal, () => readText(request, s.cfg.MAX_BODY_BYTES))
        const body = parseJson(text)
        if (!admittedByTool(request, body)) Object.assign(headers, (await admit(principal, 'member')).headers)
        if (body === undefined) throw new ApiError('BAD_REQUEST', { field: 'body', expected: 'a JSON-RPC message of the Model Context Protocol' })
        const caller: McpCaller = {
          principal,
          admit: async (access) => {
            Object.assign(headers, (await admit(principal, access)).headers)
          },
          noteHeaders: (more) => Object.assign(headers, more),
          requestId: requestId(request),
        }
        const res = await endpoint.handle(request, text, body, caller)
        for (const [k, v] of Object.entries(headers)) res.headers.set(k, v)
        return res
      },
      {
        // The transport reads JSON-RPC, not a model Elysia could validate; the body is read here, within MAX_BODY_BYTES.
        parse: 'none',
        detail: {
          summary:
            'Model Context Protocol (Streamable HTTP, stateless, JSON answers): the balance as MCP tools — search, call (paid), balance, activity, top-up, vault link, support, proposals; owner tokens also agents and policies; one tool per live capability',
        },
      },
    )
    // Stateless: no session to stream to or to end. 405 is the transport's way to say so; the client goes on with POST.
    .get('/mcp', async (c) => notAllowed(await admit(await resolve(c), 'member')), { detail: { summary: 'MCP: no server-sent event stream (stateless server) → 405' } })
    .delete('/mcp', async (c) => notAllowed(await admit(await resolve(c), 'member')), { detail: { summary: 'MCP: no session to end (stateless server) → 405' } })
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}

/** The transport's own answer to a method it does not serve (a JSON-RPC error, as MCP clients expect). */
function notAllowed(admitted: { headers: Record<string, string> }): Response {
  const body = { jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this MCP server is stateless; send JSON-RPC messages with POST' }, id: null }
  return Response.json(body, { status: 405, headers: { allow: 'POST', ...admitted.headers } })
}
