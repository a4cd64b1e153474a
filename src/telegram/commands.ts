/**
 * The operator's commands in the chat. Every command acts on the account linked to this
 * (chat, user) pair only, through the same governance services as the REST API (agent-state.lua,
 * set-policy.lua): an agent of another account is "not found", exactly as over REST.
 *
 *   /link <code>            link this chat to the account that asked for the code (also /start <code>)
 *   /status                 balance, today's spend against the daily cap, agents by state
 *   /agents                 the agents with state and today's spend
 *   /kill <agent>           kill an agent (by id or name)
 *   /revive <agent>         revive a killed agent (the spec's /revive)
 *   /cap <agent> <credits>  set an agent's daily cap ("off" removes it)
 *   /proposals              the pending proposals
 *   /approve <id> [1h] [note]  approve a proposal (also its Approve button), for a time with a
 *                           duration (m, h, d: docs/api.md §13b); /decline <id> [note]
 *   /unlink                 stop this chat acting for the account
 * errors: none thrown; every outcome is a reply text.
 */
import { ApiError, renderMessage } from '../errors'
import { changeAgentState, readAgents, type AgentView } from '../governance/agents'
import { applyPolicyChange, readAccountPolicy } from '../governance/policies'
import { MAX_CREDITS } from '../governance/model'
import type { RedisContext } from '../redis/context'
import { windowsAt } from '../windows'
import type { Database } from '../db/client'
import { claimLinkCode, linkChat, linkedAccount, unlinkChat, type ChatUser } from './links'
import { approveProposal, declineProposal, listProposals, type ProposalDeps } from '../proposals/proposals'
import type { ProposalView } from '../proposals/record'
import { readAccount } from '../redis/account-hash'

export const HELP = [
  'Commands:',
  '/status — balance, spend today, agents',
  '/agents — your agents',
  '/kill <agent> — kill an agent (id or name)',
  '/revive <agent> — revive a killed agent',
  '/cap <agent> <credits> — set an agent daily cap ("off" removes it)',
  '/proposals — pending proposals from your agents',
  '/approve <id> [30m|1h|2d] [note] — approve a proposal (for a time: it lapses by itself); /decline <id> [note] declines it',
  '/unlink — stop this chat acting for the account',
].join('\n')

const NOT_LINKED = 'This chat is not linked to an account. Ask for a code with POST /v1/operator/link (owner token), then send /link <code> here.'

export interface CommandDeps {
  ctx: RedisContext
  db: Database
  /** The proposals' services (a top-up approval needs the mandate's). */
  proposals: ProposalDeps
}

/** Parses `/cmd@Bot args`; null when the text is not a command. */
export function parseCommand(text: string): { cmd: string; args: string[] } | null {
  const m = /^\/([a-z_]+)(?:@\w+)?(?:\s+([\s\S]*))?$/i.exec(text.trim())
  if (!m) return null
  return { cmd: m[1]!.toLowerCase(), args: (m[2] ?? '').split(/\s+/).filter(Boolean) }
}

export async function runCommand(d: CommandDeps, who: ChatUser, text: string): Promise<string> {
  const parsed = parseCommand(text)
  if (!parsed) return `Send a command.\n${HELP}`
  const { cmd, args } = parsed
  if (cmd === 'link' || cmd === 'start') {
    if (!args[0]) return cmd === 'start' ? `Hello. ${NOT_LINKED}` : 'Usage: /link <code> (the code from POST /v1/operator/link)'
    const claimed = await claimLinkCode(d.ctx, args[0])
    if (!claimed) return 'That code is unknown, expired or already used. Ask for a new one with POST /v1/operator/link.'
    const acct = claimed.accountId
    try {
      await linkChat(d.db, who, acct, d.ctx.clock.now())
    } catch (e) {
      // Telegram redelivers the failed update: its code must still link then.
      await claimed.giveBack().catch(() => {})
      throw e
    }
    return `Linked to account ${acct}. Its events will arrive here.\n${HELP}`
  }
  if (cmd === 'help') return HELP
  const acct = await linkedAccount(d.db, who)
  if (!acct) return NOT_LINKED
  try {
    switch (cmd) {
      case 'status':
        return await status(d.ctx, acct)
      case 'agents':
        return listAgents(await readAgents(d.ctx, acct))
      case 'kill':
      case 'revive': {
        if (args.length !== 1) return `Usage: /${cmd} <agent id or name>`
        const agent = await findAgent(d.ctx, acct, args[0]!)
        if (typeof agent === 'string') return agent
        const after = await changeAgentState(d.ctx, acct, agent.id, cmd, 'chat')
        return `Agent ${label(after)} is ${after.state}.`
      }
      case 'cap': {
        if (args.length !== 2) return 'Usage: /cap <agent id or name> <credits | off>'
        const credits = args[1]!.toLowerCase() === 'off' ? null : Number(args[1])
        if (credits !== null && (!Number.isSafeInteger(credits) || credits < 0 || credits > MAX_CREDITS))
          return 'The cap must be a whole number of credits (or "off").'
        const agent = await findAgent(d.ctx, acct, args[0]!)
        if (typeof agent === 'string') return agent
        await applyPolicyChange(d.ctx, acct, { agents: { [agent.id]: { daily_cap: credits } } })
        return credits === null ? `Agent ${label(agent)} has no daily cap of its own now.` : `Agent ${label(agent)} may spend ${credits} credits per day (HKT).`
      }
      case 'proposals':
        return listPending(await listProposals(d.proposals, { accountId: acct, agentId: null }, 'pending'))
      case 'approve':
      case 'decline': {
        if (args.length < 1) return `Usage: /${cmd} <proposal id>${cmd === 'approve' ? ' [30m|1h|2d]' : ''} [note]`
        // /approve <id> 1h …: a second word that is a duration makes it a temporary raise.
        const forS = cmd === 'approve' && args[1] !== undefined ? durationSeconds(args[1]) : undefined
        // Held to the REST body's rule by the service (280 characters, one line): refused, not cut.
        const note = args.slice(forS === undefined ? 1 : 2).join(' ')
        const p =
          cmd === 'approve' ? await approveProposal(d.proposals, acct, args[0]!, note, 'chat', forS) : await declineProposal(d.proposals, acct, args[0]!, note, 'chat')
        return `Proposal ${p.id} is ${p.status}${p.lapses_at ? ` until ${p.lapses_at}, then it lapses by itself` : ''}.`
      }
      case 'unlink':
        await unlinkChat(d.db, who)
        return 'Unlinked: this chat no longer acts for the account or receives its events.'
      default:
        return `Unknown command /${cmd}.\n${HELP}`
    }
  } catch (e) {
    if (e instanceof ApiError) return renderMessage(e.code, e.context)
    throw e
  }
}

const label = (a: Pick<AgentView, 'id' | 'name'>) => `"${a.name}" (${a.id})`

/** A temporary raise of the daily cap (docs/api.md §13b), as /status adds it. */
const raisedCap = (r: { until: string; base: number | null } | undefined) => (r ? `; raised until ${r.until}, then ${r.base ?? 'the default'}` : '')

const UNIT_S = { m: 60, h: 3600, d: 86400 } as const

/** `45m`, `1h`, `2d` as seconds (the service holds it to 60 s..30 days); undefined: not a duration. */
export function durationSeconds(word: string): number | undefined {
  const m = /^(\d{1,7})([mhd])$/i.exec(word)
  return m ? Number(m[1]) * UNIT_S[m[2]!.toLowerCase() as keyof typeof UNIT_S] : undefined
}

function listPending(list: ProposalView[]): string {
  if (list.length === 0) return 'No pending proposals.'
  return list.map((p) => `${p.id} — ${p.kind} ${p.value}${p.agent_id ? ` for ${p.agent_id}` : ''}: "${p.reason}" (/approve ${p.id})`).join('\n')
}

/** By id, else by unique name (case-insensitive); a reply text when there is no single match. */
async function findAgent(ctx: RedisContext, acct: string, ref: string): Promise<AgentView | string> {
  const all = await readAgents(ctx, acct)
  const byId = all.find((a) => a.id === ref)
  if (byId) return byId
  const byName = all.filter((a) => a.name.toLowerCase() === ref.toLowerCase() && a.state !== 'revoked')
  if (byName.length === 1) return byName[0]!
  if (byName.length > 1) return `Several agents are named "${ref}"; use the id (see /agents).`
  return `No agent "${ref}" on this account (see /agents).`
}

/** The live agents as a tree (docs/api.md §8): each sub-agent indented under its parent, oldest first. */
function listAgents(agents: AgentView[]): string {
  const live = agents.filter((a) => a.state !== 'revoked')
  if (live.length === 0) return 'No agents yet (POST /v1/agents creates one).'
  const ids = new Set(live.map((a) => a.id))
  const line = (a: AgentView, depth: number) =>
    `${'    '.repeat(depth)}${a.state === 'killed' ? '⛔' : '✅'} ${a.name} — ${a.id} — ${a.state}${a.kill_reason ? ` (${a.kill_reason})` : ''}, spent today ${a.spent_today}${a.daily_cap !== null ? `/${a.daily_cap}` : ''}${a.budget !== null ? `, lifetime ${a.spent_total}/${a.budget}` : ''}`
  const out: string[] = []
  const walk = (parent: string | null, depth: number) => {
    // A child of a revoked (hidden) agent is shown at the top rather than lost.
    for (const a of live.filter((x) => (parent === null ? x.parent_id === null || !ids.has(x.parent_id) : x.parent_id === parent))) {
      out.push(line(a, depth))
      walk(a.id, depth + 1)
    }
  }
  walk(null, 0)
  return out.join('\n')
}

async function status(ctx: RedisContext, acct: string): Promise<string> {
  const w = windowsAt(ctx.clock.now())
  const [{ balance }, spent, policy, agents] = await Promise.all([
    readAccount(ctx, acct, 'balance'),
    ctx.redis.get(ctx.keys.spentToday(acct, w.day)),
    readAccountPolicy(ctx, acct),
    readAgents(ctx, acct),
  ])
  const count = (st: string) => agents.filter((a) => a.state === st).length
  return [
    `Account ${acct}`,
    `Balance: ${Number(balance ?? 0)} credits (cap ${policy.balance_cap})`,
    `Spent today: ${Number(spent ?? 0)} of ${policy.daily_cap} (resets ${w.resetsAt})${raisedCap(policy.raised?.daily_cap)}`,
    `Agents: ${count('active')} active, ${count('killed')} killed`,
  ].join('\n')
}
