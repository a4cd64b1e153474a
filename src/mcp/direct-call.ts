/**
 * The MCP message that carries money — one `tools/call` request, POSTed alone — answered the way the
 * SDK's stateless JSON transport answers it, without the SDK's per-message machinery. For such a
 * message the transport and its Protocol run eight zod guards and parses (four of them failing and
 * building a ZodError each), make a Server and a transport and close them again: together about as
 * much service CPU as the paid call behind it (docs/decisions.md, issue 19). Everything the SDK would
 * check before it reaches our handler is checked here first, and anything that is not the plain case
 * (a batch, `_meta` or task parameters, another header, an unknown protocol version, a malformed id
 * or params) is left to the SDK, which then answers it — or refuses it — exactly as before.
 *
 * What is answered is the SDK's own shape, built the same way (`{result, jsonrpc, id}` as
 * shared/protocol.js builds it, sent with Content-Type application/json as the transport sends it);
 * test/mcp/mcp.direct.test.ts holds every kind of tool answer byte-identical against the SDK's.
 * The tool itself runs through McpEndpoint's one `call`, the same for both: no money or governance
 * decision has a second path.
 */
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'

export interface DirectToolCall {
  id: string | number
  name: string
  args: Record<string, unknown> | undefined
}

const MESSAGE_KEYS = new Set(['jsonrpc', 'id', 'method', 'params'])
const PARAMS_KEYS = new Set(['name', 'arguments'])

/** The tool call to answer directly, or null to leave the request to the SDK. */
export function directToolCall(request: Request, body: unknown): DirectToolCall | null {
  // The transport's header checks (406, 415, 400 on a protocol version it does not speak).
  const accept = request.headers.get('accept')
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) return null
  if (request.headers.get('content-type') !== 'application/json') return null
  const version = request.headers.get('mcp-protocol-version')
  if (version !== null && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return null
  // One JSON-RPC request (JSONRPCRequestSchema: a string or integer id), tools/call, nothing else.
  if (!isRecord(body) || !onlyKeys(body, MESSAGE_KEYS)) return null
  const { jsonrpc, id, method, params } = body
  if (jsonrpc !== '2.0' || method !== 'tools/call') return null
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return null
  // Its params as CallToolRequestSchema takes them, without the `_meta` (progress, related task) or
  // `task` that make the Protocol do more than call the handler.
  if (!isRecord(params) || !onlyKeys(params, PARAMS_KEYS)) return null
  const named = toolCallParams(params)
  return named && { id: id as string | number, ...named }
}

/**
 * tools/call's params as the SDK's CallToolRequestSchema checks them — a name, `arguments` an object
 * if present — or null. The SDK path (McpEndpoint) answers null with -32602; the direct path leaves
 * the request to the SDK, which then does.
 */
export function toolCallParams(params: Record<string, unknown> | undefined): { name: string; args: Record<string, unknown> | undefined } | null {
  const name = params?.name
  const args = params?.arguments
  if (typeof name !== 'string' || (args !== undefined && !isRecord(args))) return null
  return { name, args }
}

/** The transport's JSON answer to one request: the Protocol's response object, serialised as it sends it. */
export function toolCallResponse(id: string | number, result: CallToolResult): Response {
  return new Response(JSON.stringify({ result, jsonrpc: '2.0', id }), { status: 200, headers: { 'Content-Type': 'application/json' } })
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function onlyKeys(o: Record<string, unknown>, allowed: Set<string>): boolean {
  for (const k in o) if (!allowed.has(k)) return false
  return true
}
