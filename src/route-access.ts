/**
 * Who may call each route, declared once (docs/api.md §2). Keyed `METHOD path` as Elysia's route
 * table lists it (`app.routes`). The refusal before a handler (admission.ts), the OpenAPI document's
 * security (openapi.ts), the handlers' own admission (`Http.admitIn`) and the MCP tools over a route
 * (mcp/service-tools.ts) all read it; test/architecture/route-access.test.ts holds it to the app's
 * routes, one entry each.
 */

/**
 * - `anonymous`: public; counted per token when a valid bearer comes along, else per IP.
 * - `uncounted`: public and counted nowhere (health probes, signature-guarded webhooks, the demo upstream).
 * - `member`: an owner or agent token. `operator`: the owner token only (an agent token → FORBIDDEN).
 * - `operator-or-email`: the owner token; without a bearer, anonymous (the lost-token path by e-mail).
 * - `paid`: a member admitted inside its debit (a call); a refusal before its handler is a member's.
 * - `founder`: ADMIN_TOKEN. `console`: the console's session cookie.
 * - `console-public`: console pages anyone may load; their form posts counted per IP.
 * - `own`: the route admits itself and nothing runs before its handler (/metrics with its own
 *   token, the proxy inside its debit).
 */
export type RouteAccess = 'anonymous' | 'uncounted' | 'member' | 'operator' | 'operator-or-email' | 'paid' | 'founder' | 'console' | 'console-public' | 'own'

const PROXY_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const

export const ROUTE_ACCESS: Readonly<Record<string, RouteAccess>> = {
  'GET /': 'anonymous',
  'GET /status': 'uncounted',
  'GET /v1/public-stats': 'anonymous',
  'GET /llms-full.txt': 'anonymous',
  'GET /errors.md': 'anonymous',
  'GET /openapi.json': 'anonymous',
  'GET /metrics': 'own',

  'POST /v1/signup': 'anonymous',
  'POST /v1/token/rotate': 'operator-or-email',
  'GET /rotate': 'anonymous',
  'POST /rotate': 'anonymous',

  'GET /v1/search': 'anonymous',
  'GET /capabilities': 'anonymous',
  'POST /v1/call/:slug': 'paid',
  ...Object.fromEntries(PROXY_METHODS.map((m) => [`${m} /proxy/:provider/*`, 'own' as const])),

  'GET /v1/balance': 'member',
  'GET /v1/activity': 'member',
  'GET /v1/activity/:call_id': 'member',
  'GET /v1/ledger': 'operator',

  'POST /v1/keys/link': 'member',
  'GET /v1/keys': 'member',
  'DELETE /v1/keys/:provider': 'member',
  'GET /vault/:code': 'anonymous',
  'POST /vault/:code': 'anonymous',

  'POST /v1/agents': 'member',
  'GET /v1/agents': 'member',
  'POST /v1/agents/:id/kill': 'member',
  // The handler admits a member and refuses an agent token itself; FORBIDDEN either way.
  'POST /v1/agents/:id/revive': 'operator',
  'DELETE /v1/agents/:id': 'member',
  'GET /v1/policies': 'member',
  'PUT /v1/policies': 'operator',

  'POST /v1/proposals': 'member',
  'GET /v1/proposals': 'member',
  'GET /v1/runs': 'member',
  'GET /v1/proposals/:id': 'member',
  'POST /v1/proposals/:id/approve': 'operator',
  'POST /v1/proposals/:id/decline': 'operator',

  'POST /v1/support': 'member',
  'GET /v1/support/:id': 'member',

  'GET /v1/mandate': 'member',
  'PUT /v1/mandate': 'operator',
  'DELETE /v1/mandate': 'operator',
  'POST /v1/topup': 'member',
  'GET /mandate': 'anonymous',
  'POST /mandate': 'anonymous',
  'GET /mandate/done': 'anonymous',
  'GET /topup': 'anonymous',
  'POST /topup': 'anonymous',
  'GET /topup/done': 'anonymous',
  'POST /webhooks/stripe': 'uncounted',

  'PUT /v1/webhooks': 'operator',
  'GET /v1/webhooks': 'operator',
  'DELETE /v1/webhooks': 'operator',
  'GET /v1/webhooks/deliveries': 'operator',
  'GET /v1/events': 'operator',
  'POST /v1/operator/link': 'operator',
  // Its handler counts only callers without the bot's secret, itself.
  'POST /ops/telegram': 'uncounted',

  'PATCH /admin/support/:id': 'founder',
  'POST /admin/capabilities/:slug/pause': 'founder',
  'POST /admin/capabilities/:slug/resume': 'founder',
  'POST /admin/signups/resume': 'founder',
  'PUT /admin/accounts/:id/balance-cap': 'founder',
  'GET /admin/alarms': 'founder',
  'GET /admin/reconciliation': 'founder',
  'POST /admin/reconciliation/run': 'founder',
  'GET /admin/dead-letters': 'founder',
  'POST /admin/dead-letters/:id/replay': 'founder',
  'DELETE /admin/dead-letters/:id': 'founder',
  'GET /admin/parked': 'founder',
  'POST /admin/parked/:id/approve': 'founder',
  'POST /admin/parked/:id/reject': 'founder',

  // The demo provider's upstream, which the service calls itself (mounted only while configured).
  'POST /demo/echo': 'uncounted',
  'POST /demo/flaky': 'uncounted',

  'GET /.well-known/oauth-protected-resource': 'anonymous',
  'GET /.well-known/oauth-protected-resource/mcp': 'anonymous',
  'GET /.well-known/oauth-authorization-server': 'anonymous',
  'POST /oauth/register': 'anonymous',
  'GET /oauth/authorize': 'anonymous',
  'POST /oauth/token': 'anonymous',
  'POST /oauth/revoke': 'anonymous',
  'OPTIONS /oauth/token': 'anonymous',
  'OPTIONS /oauth/register': 'anonymous',
  'OPTIONS /oauth/revoke': 'anonymous',

  // The MCP handler resolves an OAuth access token too, and admits by the principal (modules/mcp).
  'POST /mcp': 'member',
  'GET /mcp': 'member',
  'DELETE /mcp': 'member',

  'GET /console/sign-in': 'console-public',
  'POST /console/sign-in': 'console-public',
  'GET /console/console.css': 'console-public',
  'GET /console/authorize': 'console-public',
  'POST /console/authorize': 'console-public',
  'POST /console/sign-out': 'console',
  'GET /console': 'console',
  'GET /console/agents': 'console',
  'GET /console/policies': 'console',
  'GET /console/activity': 'console',
  'GET /console/money': 'console',
  'GET /console/keys': 'console',
  'GET /console/proposals': 'console',
  'GET /console/webhooks': 'console',
  'GET /console/ledger': 'console',
  'POST /console/agents': 'console',
  'POST /console/agents/:id/kill': 'console',
  'POST /console/agents/:id/revive': 'console',
  'POST /console/agents/:id/revoke': 'console',
  'POST /console/policies': 'console',
  'POST /console/money/mandate': 'console',
  'POST /console/money/topup': 'console',
  'POST /console/keys/link': 'console',
  'POST /console/proposals/:id/approve': 'console',
  'POST /console/proposals/:id/decline': 'console',
  'POST /console/webhooks': 'console',
  'POST /console/webhooks/delete': 'console',
  'POST /console/webhooks/chat-link': 'console',
}

/** The access of a route (`METHOD path`), or undefined for a route the table does not name. */
export function accessOf(method: string, path: string): RouteAccess | undefined {
  return ROUTE_ACCESS[`${method} ${path}`]
}

/** Routes whose callers need no credential: the OpenAPI document marks them public. */
export const isPublic = (access: RouteAccess | undefined): boolean => access === 'anonymous' || access === 'uncounted' || access === 'console-public'

/** The routes of one access, keyed `METHOD path`. */
export const routesWith = (access: RouteAccess): ReadonlySet<string> =>
  new Set(Object.entries(ROUTE_ACCESS).filter(([, a]) => a === access).map(([route]) => route))

/** What the table says against the app's routes: a route registered twice, a route with no entry, an entry that names no route. */
export function tableMismatches(routes: readonly { method: string; path: string }[], table: Readonly<Record<string, RouteAccess>> = ROUTE_ACCESS): string[] {
  const registered = routes.map((r) => `${r.method} ${r.path}`)
  const counts = new Map<string, number>()
  for (const r of registered) counts.set(r, (counts.get(r) ?? 0) + 1)
  return [
    ...[...counts].filter(([, n]) => n > 1).map(([r]) => `${r}: registered ${counts.get(r)} times`),
    ...[...counts.keys()].filter((r) => !(r in table)).map((r) => `${r}: a route with no entry`),
    ...Object.keys(table).filter((r) => !counts.has(r)).map((r) => `${r}: an entry that names no route`),
  ]
}
