/** An owner event as one chat message: what happened, and the command or link that answers it. */
import type { EventData, EventType, OwnerEvent } from './types'

type D<T extends EventType> = EventData[T]

const agentName = (d: { name?: string; agent_id: string }) => (d.name ? `"${d.name}" (${d.agent_id})` : d.agent_id)

/** What a proposal asks for, in words. */
/** A raise's duration as the chat writes it (`/approve <id> 1h`): days, hours or minutes when whole, else seconds. */
export function durationWords(s: number): string {
  if (s % 86400 === 0) return `${s / 86400}d`
  if (s % 3600 === 0) return `${s / 3600}h`
  if (s % 60 === 0) return `${s / 60}m`
  return `${s}s`
}

function proposalWhat(x: { kind: string; value: number | string; agent_id: string | null }): string {
  const whose = x.agent_id ? `agent ${x.agent_id}` : 'the account'
  switch (x.kind) {
    case 'raise_daily_cap':
      return `a daily cap of ${x.value} credits for ${whose}`
    case 'raise_budget':
      return `a budget of ${x.value} credits for ${whose}`
    case 'allow':
      return `allowing ${x.value} for ${whose}`
    case 'topup':
      return `a top-up of ${x.value} credits`
    default:
      return `${x.kind} ${x.value}`
  }
}

/**
 * Buttons under an event's chat message (Bot API inline keyboard); their callback_data is the
 * command a tap runs. Only a new proposal has any.
 */
export function eventButtons(ev: OwnerEvent): { text: string; callback_data: string }[][] | null {
  if (ev.type !== 'proposal.created') return null
  const id = (ev.data as D<'proposal.created'>).proposal_id
  return [[{ text: 'Approve', callback_data: `/approve ${id}` }, { text: 'Decline', callback_data: `/decline ${id}` }]]
}

export function renderEvent(ev: OwnerEvent): string {
  const d = ev.data as unknown
  switch (ev.type) {
    case 'balance.low': {
      const x = d as D<'balance.low'>
      return `Balance low: ${x.balance} credits left (alert below ${x.threshold}).${x.auto_refill ? ' Auto-refill is on and starting.' : ' Top up, or turn on auto-refill.'}`
    }
    case 'refill.succeeded': {
      const x = d as D<'refill.succeeded'>
      return `Refill succeeded: +${x.credits} credits, balance ${x.balance}.`
    }
    case 'refill.failed': {
      const x = d as D<'refill.failed'>
      const why = x.reason === 'authentication_required' ? 'your bank wants the card holder to confirm the payment' : x.message
      return `Refill of ${x.credits} credits failed: ${why}.${x.enable_url ? ` Fix it here: ${x.enable_url}` : ''}`
    }
    case 'cap.reached': {
      const x = d as D<'cap.reached'>
      const what = x.scope === 'agent' ? `Agent ${x.agent_id} reached its daily cap` : x.scope === 'requests' ? 'The daily request cap (unpriced routes) is reached' : 'The account daily cap is reached'
      const hint = x.scope === 'requests' ? '' : x.scope === 'agent' && x.agent_id ? ` Raise it with /cap ${x.agent_id} <credits>.` : ' Raise it with PUT /v1/policies.'
      return `${what} (${x.spent} of ${x.cap}); calls are refused until ${x.resets_at}.${hint}`
    }
    case 'cap.threshold': {
      const x = d as D<'cap.threshold'>
      const whose = x.scope === 'agent' ? `Agent ${x.agent_id}` : 'The account'
      const what = x.cap_kind === 'budget' ? 'lifetime budget' : 'daily cap'
      const until = x.resets_at ? ` It resets at ${x.resets_at}.` : ''
      const hint = x.scope === 'agent' && x.cap_kind === 'daily_cap' && x.agent_id ? ` Raise it with /cap ${x.agent_id} <credits>.` : ' Raise it with PUT /v1/policies.'
      return `${whose} has spent ${x.percent}% of its ${what} (${x.spent} of ${x.cap} credits).${until}${x.percent >= 100 ? ' Further calls are refused.' : ''}${hint}`
    }
    case 'agent.created': {
      const x = d as D<'agent.created'>
      const under = x.parent_id ? ` by agent ${x.parent_id} (depth ${x.depth}${x.budget === null ? '' : `, budget ${x.budget}`})` : ''
      return `Agent ${agentName(x)} was created${under}.`
    }
    case 'agent.killed': {
      const x = d as D<'agent.killed'>
      if (x.reason === 'breaker')
        return `Runaway-agent breaker: agent ${agentName(x)} was killed (${x.rule === 'identical_per_minute' ? 'identical requests' : 'credits'} in a minute: ${x.observed}, limit ${x.limit}). Revive it with /revive ${x.agent_id}`
      return `Agent ${agentName(x)} was killed by the operator (${x.via === 'chat' ? 'chat' : 'API'}). Revive it with /revive ${x.agent_id}`
    }
    case 'agent.revived': {
      const x = d as D<'agent.revived'>
      return `Agent ${agentName(x)} was revived; its token works again.`
    }
    case 'agent.revoked': {
      const x = d as D<'agent.revoked'>
      return `Agent ${agentName(x)} was revoked for good.`
    }
    case 'capability.paused': {
      const x = d as D<'capability.paused'>
      return `Capability ${x.slug} is paused (${x.reason === 'spend_alarm' ? 'its hourly spend alarm tripped' : 'by the service'}); its calls answer API_PAUSED for now.`
    }
    case 'payment.parked': {
      const x = d as D<'payment.parked'>
      return `A payment of ${x.credits} credits is parked for review: it would pass the balance cap of ${x.balance_cap} (balance ${x.balance}).`
    }
    case 'payment.reversed': {
      const x = d as D<'payment.reversed'>
      const why = x.cause === 'dispute' ? 'was disputed by the card holder' : 'was refunded'
      const rest = x.unrecovered > 0 ? ` (${x.unrecovered} credits were already spent)` : ''
      const card = x.mandate_disabled ? ' Auto-refill is off and its card forgotten: a new consent is needed.' : ''
      return `Payment ${x.charge_id} ${why}: ${x.taken} credits taken back${rest}, balance ${x.balance}.${card}`
    }
    case 'support.updated': {
      const x = d as D<'support.updated'>
      return `Support problem ${x.problem_id} is ${x.status}${x.note ? `: ${x.note}` : ''}. ${x.status_url}`
    }
    case 'proposal.created': {
      const x = d as D<'proposal.created'>
      const who = x.proposed_by === 'owner' ? 'The owner' : `Agent ${x.proposed_by}`
      const time = x.for_s ? ` for ${durationWords(x.for_s)} (then it lapses by itself)` : ''
      return `${who} proposes ${proposalWhat(x)}${time}: "${x.reason}". Approve with /approve ${x.proposal_id}, or /decline ${x.proposal_id} (expires ${x.expires_at}).`
    }
    case 'proposal.decided': {
      const x = d as D<'proposal.decided'>
      const until = x.lapses_at ? ` until ${x.lapses_at}, then it lapses by itself` : ''
      return `Proposal ${x.proposal_id} (${proposalWhat(x)}) is ${x.status}${until}${x.via === 'chat' ? ' (chat)' : ''}${x.note ? `: ${x.note}` : ''}.`
    }
    default:
      return `Event ${String(ev.type)}: ${JSON.stringify(ev.data)}`
  }
}
