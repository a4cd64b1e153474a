/**
 * The MCP endpoint (docs/api.md §10): the official SDK's Streamable HTTP transport in stateless mode —
 * a fresh server and transport per HTTP request, answers as JSON, no session id — so any instance
 * answers any request and nothing is kept between requests. Without an open stream there is no
 * notifications/tools/list_changed: the server says so (listChanged: false) and clients re-list.
 * A plain tools/call (the paid hot path) is answered in the SDK's own shape without it (./direct-call.ts).
 *
 * A tool result carries the REST answer's JSON as text and as structuredContent (text only for a
 * paid answer nested too deep to serialise again, ./tool.ts); a refusal is a tool result with
 * isError whose text is the REST error body ({error, message, ...context}).
 * errors (as tool errors): those of the adapted routes; FORBIDDEN (owner-only tool, agent token);
 *         NOT_FOUND (no such tool); INTERNAL (unexpected, logged with a request id).
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js'
import { ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import type { Principal } from '../auth/principal'
import { ApiError } from '../errors'
import { errorFields } from '../log'
import type { Services } from '../services'
import { VERSION } from '../version'
import { ToolRegistry } from './registry'
import type { RouteLike } from '../route-table'
import type { ToolAnswer } from './tool'
import { directToolCall, toolCallParams, toolCallResponse } from './direct-call'
import { memberText } from '../json-members'

/** The HTTP request's caller, resolved from its bearer; admission is the route's (see modules/mcp). */
export interface McpCaller {
  principal: Principal
  /** Admits the caller as a REST route of that access would (throws its refusal). */
  admit(access: 'member' | 'operator'): Promise<void>
  /** Headers a refusal asks for (Retry-After and the rate headers). */
  noteHeaders(headers: Record<string, string>): void
  requestId: string
}

const INSTRUCTIONS =
  'A prepaid, capped API balance. search_capabilities finds what you can call; call_capability (or the per-capability tool) ' +
  'debits its price and answers with the charge and the balance. A refusal is a tool error whose text is a JSON body ' +
  '{error, message, ...}: follow its message; on PAYMENT_REQUIRED relay human_readable and enable_url to your human verbatim, ' +
  'or ask for money with top_up or propose. The tool list follows the catalog (paused capabilities leave it): list tools again when a call answers API_PAUSED.'

export class McpEndpoint {
  readonly registry: ToolRegistry
  /**
   * The SDK's own validator (elicitation answers only), built once: a Server left to make its own
   * compiles a fresh Ajv with every format per request, which cost more CPU than the paid call itself.
   */
  private validator = new AjvJsonSchemaValidator()

  constructor(
    private s: Services,
    routes: () => RouteLike[],
  ) {
    this.registry = new ToolRegistry(s, routes)
  }

  /** Answers one HTTP request of the transport; `text` is its body as read, `body` the same parsed. */
  async handle(request: Request, text: string, body: unknown, caller: McpCaller): Promise<Response> {
    // The plain tools/call, answered as the SDK would answer it (./direct-call.ts); the rest is the SDK's.
    const direct = directToolCall(request, body)
    if (direct) return toolCallResponse(direct.id, await this.call(direct.name, direct.args, caller, request.signal, text))
    // The transport answers each request id once: of two requests of a batch with one id, both ran
    // (a paid one charged) and one answer was dropped. MCP never reuses an id: refused before any runs.
    if (reusesRequestId(body)) return invalidBatch('Invalid Request: a batch must not use a request id twice')
    const server = new Server({ name: 'prepaid-api-balance', version: VERSION }, {
      capabilities: { tools: { listChanged: false } },
      instructions: INSTRUCTIONS,
      jsonSchemaValidator: this.validator,
    })
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.registry.list(caller.principal.agentId === null) }))
    // Stateless, a cancellation can only name a request of its own batch, and the Protocol then
    // sends that request no answer: the JSON answer waited for it forever, after a paid call's
    // debit (charged, its call_id never told). Ignored, as MCP allows: every request is answered.
    server.removeNotificationHandler('notifications/cancelled')
    // tools/call, the hot path, is the SDK's fallback handler: a handler set for it would parse the
    // request with zod twice more and the result once (~50 µs of service CPU a call, measured), for a
    // message the transport has already parsed and a result built here. Its params are checked below.
    server.fallbackRequestHandler = async (req) => {
      if (req.method !== 'tools/call') throw methodNotFound()
      const params = toolCallParams(req.params)
      if (!params)
        throw new McpError(ErrorCode.InvalidParams, 'Invalid tools/call request: params.name must be a string and params.arguments, if present, an object')
      return this.call(params.name, params.args, caller, request.signal, text, runOfMeta(req.params))
    }
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
    await server.connect(transport)
    try {
      return await withoutStacks(() => transport.handleRequest(request, { parsedBody: body }))
    } finally {
      // The JSON answer is complete by now; nothing of this request outlives it.
      await withoutStacks(() => server.close())
    }
  }

  private async call(name: string, args: unknown, caller: McpCaller, signal: AbortSignal, text: string, run?: unknown): Promise<CallToolResult> {
    try {
      const tool = this.registry.find(name)
      // Admission first, as on REST: a caller learns nothing (not even which tools exist) before it.
      if (!tool) {
        await caller.admit('member')
        throw new ApiError('NOT_FOUND', { resource: 'tool' })
      }
      // A paid tool is admitted inside the debit script, as POST /v1/call is: one count, one round trip.
      if (tool.access !== 'paid') await caller.admit(tool.access)
      // Cut out only when a tool asks (a paid call): one message's params.arguments, null in a batch.
      const writtenArguments = () => memberText(memberText(text, 'params'), 'arguments')
      return success(await tool.run({ principal: caller.principal, signal, writtenArguments, run }, args))
    } catch (e) {
      return failure(this.apiError(e, name, caller), caller)
    }
  }

  private apiError(e: unknown, tool: string, caller: McpCaller): ApiError {
    if (e instanceof ApiError) return e
    this.s.log.error('unhandled', { request_id: caller.requestId, path: '/mcp', tool, ...errorFields(e) })
    return new ApiError('INTERNAL', { request_id: caller.requestId })
  }
}

/**
 * Runs the SDK's synchronous part of a request (message intake up to the handler's start; close)
 * with no stack traces captured. That part builds errors nobody reads: each of its type guards that
 * fails (isInitializeRequest twice, isJSONRPCResultResponse and isJSONRPCErrorResponse, on every
 * tools/call) constructs a ZodError, and close() aborts the finished handler's signal (a
 * DOMException) and makes a "Connection closed" McpError. Capturing their stacks through the
 * service's deep call chain cost 50–130 µs of service CPU per MCP call (docs/decisions.md, issue
 * 19). No code of ours runs in this stretch (the tool handler starts in a later
 * microtask), the limit is restored before anything else can run, and an error the SDK would
 * throw here keeps its message, only not its stack.
 */
function withoutStacks<T>(f: () => T): T {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return f()
  } finally {
    Error.stackTraceLimit = limit
  }
}

/** `_meta["pab/run"]` of a tools/call (docs/api.md §13c): a message with `_meta` never takes the direct path. */
function runOfMeta(params: Record<string, unknown> | undefined): unknown {
  const meta = params?._meta
  return typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>)['pab/run'] : undefined
}

/** Whether two requests of a JSON-RPC batch share an id (compared as the transport's map of ids does). */
function reusesRequestId(body: unknown): boolean {
  if (!Array.isArray(body)) return false
  const ids = new Set<unknown>()
  for (const m of body as unknown[]) {
    if (typeof m !== 'object' || m === null || !('method' in m) || !('id' in m)) continue
    if (ids.has(m.id)) return true
    ids.add(m.id)
  }
  return false
}

/** The transport's own refusal of a message it does not take (HTTP 400, a JSON-RPC error with no id). */
function invalidBatch(message: string): Response {
  return Response.json({ jsonrpc: '2.0', error: { code: ErrorCode.InvalidRequest, message }, id: null }, { status: 400 })
}

/** The JSON-RPC answer the SDK gives a method no handler serves (code -32601, "Method not found"). */
function methodNotFound(): Error {
  return Object.assign(new Error('Method not found'), { code: ErrorCode.MethodNotFound })
}

function success(a: ToolAnswer): CallToolResult {
  const content: CallToolResult['content'] = [{ type: 'text', text: a.text }]
  return a.value ? { content, structuredContent: a.value } : { content }
}

function failure(err: ApiError, caller: McpCaller): CallToolResult {
  caller.noteHeaders(err.headers)
  const body = err.body()
  return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body, isError: true }
}
