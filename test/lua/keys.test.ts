/** The key schema: every key of one account hashes to one Redis Cluster slot. */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { Keys, SHARDS, shardOfAccount } from '../../src/redis/keys'
import { newAccountId } from '../../src/ledger/accounts'

// CRC16/XMODEM over the hash tag, as Redis Cluster computes slots.
function slot(key: string): number {
  const open = key.indexOf('{')
  let k = key
  if (open >= 0) {
    const close = key.indexOf('}', open + 1)
    if (close > open + 1) k = key.slice(open + 1, close)
  }
  let crc = 0
  for (const b of Buffer.from(k)) {
    crc ^= b << 8
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  }
  return crc % 16384
}

describe('redis/keys', () => {
  test('every key of an account, its shard outbox and counters share one slot', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.nat(100000), fc.string({ minLength: 1, maxLength: 20 }), (agent, day, idem) => {
        const k = new Keys('pab')
        const acct = newAccountId(null)
        const agentId = agent ? 'agt_x' : null
        const keys = [
          k.account(acct),
          k.agent(acct, agentId),
          k.agents(acct),
          k.liveAgents(acct),
          k.spentToday(acct, day),
          k.unpricedRequestsToday(acct, day),
          k.rateWindow(acct, agentId, day),
          k.breakerWindow(acct, agentId, day),
          k.call(acct, 'call_1'),
          k.idempotency(acct, agentId, idem),
          k.recentCalls(acct),
          k.outbox(k.shardOf(acct)),
          k.stats(k.shardOf(acct)),
        ]
        expect(new Set(keys.map(slot)).size).toBe(1)
      }),
    )
  })

  test('the shard is read from the account id; anything else is refused', () => {
    expect(shardOfAccount('acc_07_abc')).toBe(7)
    expect(shardOfAccount('acc_15_x')).toBe(15)
    for (const bad of ['acc_7_abc', 'acc_ab_x', 'agt_07_x', 'acc_07x', '', 'acc_1'])
      expect(() => shardOfAccount(bad)).toThrow(/not an account id/)
    expect(() => new Keys('pab').account('acc_99_x')).toThrow(/no shard/)
  })

  test('a referred account joins its referrer’s shard', () => {
    const referrer = newAccountId(null)
    const k = new Keys('pab')
    for (let i = 0; i < 20; i++) expect(k.shardOf(newAccountId(referrer))).toBe(k.shardOf(referrer))
  })

  test('the shards spread over the cluster’s slots', () => {
    const k = new Keys('pab')
    const slots = new Set(Array.from({ length: SHARDS }, (_, s) => slot(k.outbox(s))))
    expect(slots.size).toBe(SHARDS)
  })
})
