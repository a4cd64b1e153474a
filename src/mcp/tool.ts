/**
 * An MCP tool of this service: a thin adapter over the service function a REST route calls. Its
 * access says where the caller is admitted, exactly as on the route it adapts: `member` and
 * `operator` by the admission script (token current, agent active, rate limit; operator: owner
 * token only), `paid` inside the debit script itself, like POST /v1/call.
 */
import type { Principal } from '../auth/principal'

export type Access = 'member' | 'operator' | 'paid'

export interface ToolCall {
  principal: Principal
  /** Aborts when the client goes away (the paid call then settles as client_closed). */
  signal: AbortSignal
}

/** The REST answer of a tool: its JSON text as REST sends it, and the same object. */
export interface ToolAnswer {
  text: string
  value: Record<string, unknown>
}

export interface McpTool {
  name: string
  description: string
  /** JSON Schema of the arguments, as tools/list announces it. */
  inputSchema: Record<string, unknown>
  access: Access
  /** Runs after admission: checks the arguments (BAD_REQUEST naming the field), then the service. */
  run(call: ToolCall, args: unknown): Promise<ToolAnswer>
}

export const answerOf = (value: object): ToolAnswer => ({ text: JSON.stringify(value), value: value as Record<string, unknown> })

/** An answer already serialized (the paid call's body, also what an Idempotency-Key replays). */
export class JsonAnswer implements ToolAnswer {
  readonly value: Record<string, unknown>
  constructor(readonly text: string) {
    this.value = JSON.parse(text) as Record<string, unknown>
  }
}
