/**
 * Which MCP requests the route leaves for their tool to admit. A tool call is admitted where its
 * tool is, in McpEndpoint.call (the adapted route's admission; a paid call inside its debit,
 * counted once); every other request is admitted by the route, as rate limits count every request
 * (docs/api.md §6). So the route may skip its admission only for a request that is certain to reach
 * McpEndpoint.call: a tools/call the transport or the Protocol refuses or answers first (a
 * notification, malformed params, a header or a message the transport does not take, a task the
 * server does not offer) would otherwise be counted nowhere. A batch is admitted by the route, and
 * its calls again by their tools.
 */
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js'
import { isTaskAugmentedRequestParams, JSONRPCRequestSchema, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js'
import { directToolCall, toolCallParams } from './direct-call'

export function admittedByTool(request: Request, body: unknown): boolean {
  // The plain call, the hot path: answered directly, always through McpEndpoint.call.
  if (directToolCall(request, body)) return true
  // Else the SDK answers it, reaching McpEndpoint.call only past each of these, in its order: the
  // transport's header checks (406, 415, 400) and message schema, the Protocol's refusal of a task
  // (no tasks capability), the fallback handler's params check (-32602).
  const accept = request.headers.get('accept')
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) return false
  if (!isJsonContentType(request.headers.get('content-type'))) return false
  const version = request.headers.get('mcp-protocol-version')
  if (version !== null && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return false
  const message = JSONRPCRequestSchema.safeParse(body)
  if (!message.success || message.data.method !== 'tools/call') return false
  const { params } = message.data
  if (isTaskAugmentedRequestParams(params) && params?.task) return false
  return toolCallParams(params) !== null
}
