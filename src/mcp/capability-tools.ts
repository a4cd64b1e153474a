/**
 * Each capability of the catalog as its own MCP tool (`web.search` → `web_search`), so a model can
 * pick it directly: its params schema is the input, its price is in the description, and a call
 * is POST /v1/call/{slug} with the arguments as the body (the same function, the same debit).
 */
import { refusalAfterAdmission } from '../auth/refusal-after-admission'
import { callCapability } from '../calls/capability-call'
import { RUN_META, runBudgetOf } from '../paid-request/run-header'
import type { Capability } from '../catalog/catalog'
import { checkText } from '../edge/text'
import { asWritten } from '../json-members'
import type { Services } from '../services'
import type { ProviderKeys } from '../vault/provider-key'
import { JsonAnswer, type McpTool } from './tool'

export const capabilityToolName = (slug: string): string => slug.replace(/\./g, '_')

export function capabilityTool(s: Services, keys: ProviderKeys, cap: Capability): McpTool {
  return {
    name: capabilityToolName(cap.slug),
    access: 'paid',
    description: `${cap.description.replace(/\.?$/, '.')} ${s.catalog.meteredCapability(cap) ? meteredNote(s, cap) : priceNote(cap)} The answer: call_id, charged, balance, provider_status${s.catalog.meteredCapability(cap) ? ', usage (the tokens charged and their exact cost: usage.cost in USD, usage.cost_details.credits)' : ''} and the provider's result. (REST: POST /v1/call/${cap.slug})`,
    // MCP wants an object schema; a catalog entry that leaves `type` out still describes an object body.
    inputSchema: { type: 'object', ...cap.params },
    async run(call, args) {
      // The edge's check before the arguments are serialised: JSON.stringify overflows the stack on
      // a value nested far past the check's depth limit (an INTERNAL where a BAD_REQUEST belongs).
      // Its refusal comes before the debit, where a paid call is admitted: answered after the
      // admission, as POST /v1/call's are (counted; a killed agent hears that).
      const run = await refusalAfterAdmission(s, call.principal, () => {
        checkText(args ?? {}, 'all')
        return runBudgetOf(call.run, call.principal, RUN_META)
      })
      const answer = await callCapability(s, keys, {
        principal: call.principal,
        slug: cap.slug,
        // As the agent wrote them, as REST forwards its body (a 64-bit id serialised again is rounded).
        rawBody: asWritten(call.writtenArguments(), args ?? {}),
        idempotencyKey: null,
        signal: call.signal,
        run,
      })
      return new JsonAnswer(answer.body || '{}')
    },
  }
}

function priceNote(cap: Capability): string {
  switch (cap.lane) {
    case 'house':
      return `Price: ${cap.price} credits per call, debited from the prepaid balance (refunded when the provider fails).`
    case 'byok':
      return `Price: ${cap.price} credits service fee per call; runs on your own ${cap.provider} key from the vault (request_vault_link).`
    case 'free':
      return 'Price: free (counted against the daily request cap of unpriced calls).'
  }
}

/** A metered capability is charged by its tokens (docs/api.md §7), not by a flat price: its models' prices. */
function meteredNote(s: Services, cap: Capability): string {
  const models = Object.entries(s.catalog.meteredCapability(cap)!.spec.models)
    .map(([id, p]) => `${id} ${p.input} in / ${p.output} out, max output ${p.max_output}`)
    .join('; ')
  return `Price: by the tokens used, credits per 1,000,000 tokens: ${models} (a model not listed is refused; exact prices in GET /v1/search).`
}
