/**
 * The service's own MCP tools (docs/api.md §10), each the adapter of one REST route: the route's
 * input model, the service function its handler calls, the answer its handler returns. Nothing
 * here decides about money or governance; that stays in the functions (and their scripts).
 */
import { Type as T, type TObject } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { ACTIVITY_MAX_LIMIT, activityOf, balanceOf, reachOf } from '../account/views'
import { callCapability, IDEMPOTENCY_KEY_PATTERN } from '../calls/capability-call'
import { RUN_META, runBudgetOf } from '../paid-request/run-header'
import { listRuns } from '../ledger/runs'
import { searchAnswer } from '../catalog/search-answer'
import { changeAgentState, readAgents, type AgentAction } from '../governance/agents'
import { putPolicies, type PoliciesPatch } from '../governance/policy-views'
import { topup } from '../mandate/mandate'
import { approveProposal, createProposal, declineProposal, type NewProposal } from '../proposals/proposals'
import { DecisionNote, RaiseSeconds } from '../proposals/record'
import { proposalDeps } from '../proposals/deps'
import type { Services } from '../services'
import { fileProblem, type NewProblem } from '../support/problems'
import { openVault, requestLink } from '../vault/account-keys'
import type { ProviderKeys } from '../vault/provider-key'
import { FreeJson } from '../edge/text'
import { refusalAfterAdmission } from '../auth/refusal-after-admission'
import { asWritten, memberText } from '../json-members'
import { argsParser } from './args'
import type { RouteRef, RouteSchemas } from './route-schemas'
import { answerOf, JsonAnswer, type Access, type McpTool, type ToolCall } from './tool'
import { accessOf } from '../route-access'


export const CALL_TOOL = 'call_capability'

/**
 * A tool's admission, from the route table's entry of the route it adapts (route-access.ts): a paid
 * call inside its debit, an operator-only route's tool the owner token's, any other a member's (an
 * MCP request always carries a bearer, so a public route's tool admits its caller as a member).
 */
export function toolAccessOf(route: RouteRef): Access {
  const [method, path] = route.split(' ') as [string, string]
  const access = accessOf(method, path)
  if (access === 'paid') return 'paid'
  if (access === 'operator' || access === 'operator-or-email') return 'operator'
  if (access === 'member' || access === 'anonymous') return 'member'
  throw new Error(`MCP tool adapts ${route}, whose access (${access ?? 'none'}) no tool can have`)
}

export function serviceTools(s: Services, schemas: RouteSchemas, keys: ProviderKeys): McpTool[] {
  const vault = openVault(s)
  const proposals = proposalDeps(s)

  /**
   * A tool over a route: its input schema (or a given one), the route's summary first in its
   * description, and its answer cut to the route's response model as Elysia cuts the REST answer.
   * Its admission is the route's (toolAccessOf) unless given stricter.
   */
  function tool<A>(
    name: string,
    route: RouteRef,
    input: 'body' | 'query' | 'params' | TObject,
    note: string,
    run: (call: ToolCall, args: A) => Promise<object>,
    access: Access = toolAccessOf(route),
  ): McpTool {
    const args = argsParser<A>(typeof input === 'string' ? schemas.part(route, input) : input)
    const summary = schemas.summary(route)
    const shape = schemas.answer(route)
    return {
      name,
      access,
      description: `${summary}${summary.endsWith('.') ? '' : '.'} ${note} (REST: ${route})`.trim(),
      inputSchema: args.jsonSchema,
      async run(call, raw) {
        // A paid tool is admitted inside its debit (tool.ts): its arguments refused before it are
        // answered after the admission, as POST /v1/call's are (counted; a killed agent hears that).
        const parsed = access === 'paid' ? await refusalAfterAdmission(s, call.principal, () => args.parse(raw)) : args.parse(raw)
        const out = await run(call, parsed)
        if (out instanceof JsonAnswer) return out
        return answerOf(shape ? (Value.Clean(shape, Value.Clone(out)) as object) : out)
      },
    }
  }
  const nothing = T.Object({}, { additionalProperties: false })
  const proposalId = T.String({ maxLength: 64, description: 'The proposal, prop_…' })
  const activityQuery = schemas.part('GET /v1/activity', 'query') as TObject

  return [
    tool<{ q: string }>('search_capabilities', 'GET /v1/search', 'query', 'Find capabilities by words; call one with call_capability or with its own tool.', async (_, a) =>
      searchAnswer(s.catalog, a.q),
    ),
    tool<{ slug: string; params?: unknown; idempotency_key?: string }>(
      CALL_TOOL,
      'POST /v1/call/:slug',
      T.Object(
        {
          slug: T.String({ minLength: 1, maxLength: 80, description: 'The capability, e.g. web.search (search_capabilities lists them)' }),
          // Free text inside, as the REST call's body (several lines pass).
          params: T.Optional(FreeJson({ description: "The capability's params: a JSON object valid against its params schema (default {})" })),
          idempotency_key: T.Optional(
            T.String({ pattern: IDEMPOTENCY_KEY_PATTERN, description: 'As the Idempotency-Key header: a retry with the same key and params is answered once, charged once' }),
          ),
        },
        { additionalProperties: false },
      ),
      'A refusal comes back as a tool error holding the REST error body; relay a 402 human_readable and enable_url to your human verbatim. ' +
        'A run budget: put "<run id>; max=<credits>; ttl=<seconds>" in the request\'s _meta["pab/run"] (as the X-Budget-Run header); the result then shows the run.',
      async (call, a) => {
        // The params are the provider's free text, checked as such inside the call; the rest is one
        // line each (checked with the arguments: params is a FreeJson).
        const run = await refusalAfterAdmission(s, call.principal, () => runBudgetOf(call.run, call.principal, RUN_META))
        const answer = await callCapability(s, keys, {
          principal: call.principal,
          slug: a.slug,
          run,
          // As the agent wrote them, as REST forwards its body (a 64-bit id serialised again is rounded).
          rawBody: asWritten(memberText(call.writtenArguments(), 'params'), a.params ?? {}),
          idempotencyKey: a.idempotency_key ?? null,
          signal: call.signal,
        })
        return new JsonAnswer(answer.body || '{}')
      },
    ),
    tool('get_balance', 'GET /v1/balance', nothing, '', (call) => balanceOf(s, call.principal.accountId)),
    tool('list_runs', 'GET /v1/runs', nothing, 'The owner sees every run; an agent those of itself and its subtree.', async (call) => ({ runs: await listRuns(s.ctx, call.principal) })),
    tool<{ limit?: number; cursor?: string }>(
      'get_activity',
      'GET /v1/activity',
      T.Object(
        {
          limit: T.Optional(T.Integer({ minimum: 1, maximum: ACTIVITY_MAX_LIMIT, description: `Page size, 1..${ACTIVITY_MAX_LIMIT} (default 50)` })),
          cursor: T.Optional(activityQuery.properties.cursor!),
        },
        { additionalProperties: false },
      ),
      '',
      async (call, a) => activityOf(s, call.principal.accountId, a.limit === undefined ? undefined : String(a.limit), a.cursor, {}, await reachOf(s, call.principal)),
    ),
    tool<{ amount?: number }>('top_up', 'POST /v1/topup', 'body', '', (call, a) => topup(s, call.principal.accountId, a.amount)),
    tool<{ provider: string }>('request_vault_link', 'POST /v1/keys/link', 'body', 'Give the url to your human.', (call, a) =>
      requestLink(s, vault, call.principal.accountId, a.provider),
    ),
    tool<NewProblem>('file_support_problem', 'POST /v1/support', 'body', '', (call, a) => fileProblem(s, call.principal, a)),
    tool<NewProposal>(
      'propose',
      'POST /v1/proposals',
      'body',
      'Your human decides; poll status_url. With for_s you ask for a temporary raise, which lapses by itself.',
      (call, a) => createProposal(proposals, call.principal, a),
    ),
    // The operator's decisions (docs/api.md §11, §13b): owner only, as their routes.
    tool<{ id: string; note?: string; for_s?: number }>(
      'approve_proposal',
      'POST /v1/proposals/:id/approve',
      T.Object({ id: proposalId, note: T.Optional(DecisionNote), for_s: T.Optional(RaiseSeconds) }, { additionalProperties: false }),
      "Owner token only. for_s (or the proposal's own for_s) makes it a temporary raise, shown with lapses_at.",
      (call, a) => approveProposal(proposals, call.principal.accountId, a.id, a.note ?? '', 'api', a.for_s),
      'operator',
    ),
    tool<{ id: string; note?: string }>(
      'decline_proposal',
      'POST /v1/proposals/:id/decline',
      T.Object({ id: proposalId, note: T.Optional(DecisionNote) }, { additionalProperties: false }),
      'Owner token only.',
      (call, a) => declineProposal(proposals, call.principal.accountId, a.id, a.note ?? ''),
      'operator',
    ),
    // Stricter than its route (where an agent token lists and kills its own descendants): over MCP
    // the agents' tools are the owner's only.
    tool('list_agents', 'GET /v1/agents', nothing, 'Owner token only.', async (call) => ({ agents: await readAgents(s.ctx, call.principal.accountId) }), 'operator'),
    agentMove('kill_agent', 'kill', 'POST /v1/agents/:id/kill'),
    agentMove('revive_agent', 'revive', 'POST /v1/agents/:id/revive'),
    tool<PoliciesPatch>('set_policies', 'PUT /v1/policies', 'body', 'Owner token only.', (call, a) =>
      putPolicies(s.ctx, call.principal.accountId, a),
    ),
  ]

  function agentMove(name: string, action: AgentAction, route: RouteRef): McpTool {
    return tool<{ id: string }>(
      name,
      route,
      'params',
      'Owner token only.',
      (call, a) => changeAgentState(s.ctx, call.principal.accountId, a.id, action),
      'operator',
    )
  }
}
