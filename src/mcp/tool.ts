/**
 * An MCP tool of this service: a thin adapter over the service function a REST route calls. Its
 * access says where the caller is admitted, exactly as on the route it adapts: `member` and
 * `operator` by the admission script (token current, agent active, rate limit; operator: owner
 * token only), `paid` inside the debit script itself, like POST /v1/call.
 */
import type { Principal } from '../auth/principal'
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../json-depth'

export type Access = 'member' | 'operator' | 'paid'

export interface ToolCall {
  principal: Principal
  /** Aborts when the client goes away (the paid call then settles as client_closed). */
  signal: AbortSignal
  /**
   * The call's `arguments` as the caller wrote them in the request body, or null where they cannot
   * be cut out (a batch): a paid call hands the provider its params as written, as REST does.
   */
  writtenArguments(): string | null
  /** `_meta["pab/run"]` of the tools/call, as sent: the run budget a paid tool counts against (docs/api.md §13c). */
  run?: unknown
}

/** The REST answer of a tool: its JSON text as REST sends it, and the same object (see JsonAnswer). */
export interface ToolAnswer {
  text: string
  /** Absent when the text nests too deep to be sent again as an object: the text alone is the answer. */
  value: Record<string, unknown> | undefined
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

/**
 * An answer already serialized (the paid call's body, also what an Idempotency-Key replays). Its
 * `result` is the provider's JSON as written, at any depth REST passes through; parsed, an answer
 * deeper than MAX_JSON_DEPTH would overflow the stack when the tool result is serialised, after
 * the debit, and the caller would get an INTERNAL without its call_id (and pay again on a retry).
 * Such an answer keeps only its text: MCP allows a result without structuredContent for a tool
 * that declares no outputSchema, and none of ours declares one (registry.ts, `listed`).
 */
export class JsonAnswer implements ToolAnswer {
  readonly value: Record<string, unknown> | undefined
  constructor(readonly text: string) {
    this.value = nestsDeeperThan(text, MAX_JSON_DEPTH) ? undefined : (JSON.parse(text) as Record<string, unknown>)
  }
}
