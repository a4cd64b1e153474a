/**
 * The MCP row's request: the paid capability through `POST /mcp` (docs/api.md §10), a JSON-RPC 2.0
 * `tools/call` of `call_capability {slug, params}` over the Streamable HTTP transport. Stateless
 * servers take the call as it comes; a server that wants a session gets an `initialize` (and the
 * `notifications/initialized` the protocol requires) first, and the row then carries its
 * `mcp-session-id`. The probe checks that one call succeeds and charges the price before any load:
 * a refused tool call is still HTTP 200, so autocannon's 2xx count alone would not notice.
 */
const PROTOCOL = '2025-06-18'

export type McpRequest = { headers: Record<string, string>; body: string; session: string | null } | { skip: string }

/** JSON-RPC ids: `[<id>]` is replaced per request by autocannon (-I), so concurrent calls never share one. */
export const mcpCallBody = (slug: string, params: unknown, id: string | number = '[<id>]') =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'call_capability', arguments: { slug, params } } })

/** The JSON-RPC message of an answer sent as JSON or as an SSE stream of `data:` lines. */
function message(contentType: string, text: string): { result?: unknown; error?: { message?: string } } | null {
  try {
    if (contentType.includes('text/event-stream')) {
      const data = text.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim())
      for (const d of data) {
        const m = JSON.parse(d)
        if ('result' in m || 'error' in m) return m
      }
      return null
    }
    return JSON.parse(text)
  } catch {
    return null
  }
}

async function post(url: string, headers: Record<string, string>, body: string) {
  const res = await fetch(url, { method: 'POST', headers, body })
  const text = await res.text()
  return { status: res.status, session: res.headers.get('mcp-session-id'), msg: message(res.headers.get('content-type') ?? '', text), text }
}

/** Whether a tools/call answer is the paid call's success (its REST body in the tool result). */
function callFailure(a: { status: number; msg: ReturnType<typeof message>; text: string }, price: number): string | null {
  if (a.status !== 200) return `HTTP ${a.status} ${a.text.slice(0, 160)}`
  const r = a.msg?.result as { isError?: boolean; structuredContent?: { charged?: number }; content?: { text?: string }[] } | undefined
  if (!r) return `no JSON-RPC result: ${a.text.slice(0, 160)}`
  if (r.isError) return `the tool refused: ${r.content?.[0]?.text?.slice(0, 160)}`
  let charged = r.structuredContent?.charged
  if (charged === undefined)
    try {
      charged = (JSON.parse(r.content?.[0]?.text ?? '{}') as { charged?: number }).charged
    } catch {}
  return charged === price ? null : `charged ${charged}, not ${price}: ${a.text.slice(0, 160)}`
}

export async function mcpRequest(svcUrl: string, token: string, slug: string, params: unknown, price: number): Promise<McpRequest> {
  const url = `${svcUrl}/mcp`
  const headers: Record<string, string> = {
    accept: 'application/json, text/event-stream',
    'content-type': 'application/json',
    authorization: `Bearer ${token}`,
    'mcp-protocol-version': PROTOCOL,
  }
  const direct = await post(url, headers, mcpCallBody(slug, params, 1))
  if (direct.status === 404) return { skip: 'the service has no MCP endpoint yet (POST /mcp answered 404)' }
  if (!callFailure(direct, price)) return { headers, body: mcpCallBody(slug, params), session: null }

  const init = await post(
    url,
    headers,
    JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'pab-bench', version: '1' } } }),
  )
  if (init.status !== 200 || !init.msg?.result) return { skip: `tools/call without a session: ${callFailure(direct, price)}; initialize answered HTTP ${init.status} ${init.text.slice(0, 160)}` }
  const withSession = init.session ? { ...headers, 'mcp-session-id': init.session } : headers
  await post(url, withSession, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }))
  const again = await post(url, withSession, mcpCallBody(slug, params, 1))
  const failed = callFailure(again, price)
  if (failed) return { skip: `tools/call call_capability failed after initialize: ${failed}` }
  return { headers: withSession, body: mcpCallBody(slug, params), session: init.session }
}
