/**
 * The breaker window a call's give-back comes off (lua/lib/breaker-window.lua): the agent's window
 * of the minute its debit fell in, and that minute, which the script checks against the call
 * record. Without an agent or a debit instant: the filler key given (never written) and no minute.
 */
import { RATE_WINDOW_MS } from '../windows'
import type { Keys } from '../redis/keys'

export function breakerWindowOfDebit(keys: Keys, accountId: string, agentId: string | null, at: number | undefined, filler: string): { key: string; minute: string } {
  if (agentId === null || at === undefined) return { key: filler, minute: '' }
  const minute = Math.floor(at / RATE_WINDOW_MS)
  return { key: keys.breakerWindow(accountId, agentId, minute), minute: String(minute) }
}
