/**
 * What runDebit sends: always debit.lua's 17 KEYS (the script's fixed key count; a slot the call does
 * not use repeats the agent's key, and the plain call leaves those out at the end: src/redis/scripts.ts),
 * and of ARGV only what the call needs: ARGV[14..19] (an agent's breaker, an unpriced route's cap, an
 * Idempotency-Key) and ARGV[20..23] are left out at the end when unused, since every argument costs
 * ioredis an encoding and Redis ~1,000 instructions per call; the script reads the absent ones as ''.
 * Behaviour on both shapes is covered by the call, metering and sub-agent tests; this pins the shape itself.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { runDebit, type DebitArgs, type DebitMetering } from '../../src/lua/debit'
import type { RedisContext } from '../../src/redis/context'
import { Keys } from '../../src/redis/keys'
import { newAccountId } from '../../src/ledger/accounts'

async function sent(a: DebitArgs): Promise<{ keys: string[]; argv: (string | number)[] }> {
  let out: { keys: string[]; argv: (string | number)[] } | null = null
  const ctx = {
    keys: new Keys('dargs'),
    scripts: {
      debit: async (keys: string[], argv: (string | number)[]) => {
        out = { keys, argv }
        return [0, 1, '', 0, 0, 5, 0, 0]
      },
    },
  } as unknown as RedisContext
  await runDebit(ctx, a)
  return out!
}

const base = (accountId: string, agentId: string | null): DebitArgs => ({
  now: 1_795_000_000_000, accountId, agentId, tokenHash: 'f'.repeat(64), target: 'bench.search', price: 5, unpriced: false,
  callId: 'call_1', day: 20_780, rateWindow: 29_916_666, prevRateWindow: 29_916_665, rateLimit: 600, defaultDailyCap: 1_000_000,
  unpricedRequestCap: 1_000, dayKeyTtlS: 172_800, breakerCreditsPerMinute: 0, breakerIdenticalPerMinute: 0, lowBalanceAlert: 0, abandonAt: 1_795_000_090_000,
})

const metering: DebitMetering = { model: 'gpt-x', inputBound: 12, input: 100, cachedInput: 10, output: 400, ceiling: null, maxOutput: 4096, minOutput: 16 }

describe('lua/debit arguments', () => {
  test("an owner's priced flat call without a key sends 13 ARGV, an agent's 16, with ancestors 20 (the chain at ARGV[20]); a metered one 22 (its model's prices and bounds one argument, then the input bound; no ceiling named)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.boolean(), fc.integer({ min: 0, max: 3 }), async (isAgent, metered, depth) => {
        const acct = newAccountId(null)
        const agentId = isAgent || depth > 0 ? 'agt_child' : null
        const chain = Array.from({ length: depth }, (_, i) => `agt_up${i}`)
        const { keys, argv } = await sent({ ...base(acct, agentId), chain, ...(metered ? { metered: metering } : {}) })
        expect(keys.length).toBe(17)
        // Without a run its two slots repeat the agent's key: the call reads nothing more (docs/api.md §13c).
        expect(keys.slice(15, 17)).toEqual([keys[1]!, keys[1]!])
        const owner = agentId === null
        // An owner has no breaker: its two window slots repeat the agent's key (KEYS[11..12]); no key, no KEYS[10].
        expect(keys[9]).toBe(keys[1])
        expect(keys[10] === keys[1]).toBe(owner)
        expect(keys[11] === keys[1]).toBe(owner)
        if (!metered && depth === 0) {
          expect(argv.length).toBe(owner ? 13 : 16)
          // The unused ancestor slots repeat the agent's own keys (same slot, never read).
          expect(keys.slice(12, 15)).toEqual([keys[1]!, keys[1]!, keys[1]!])
          return
        }
        expect(argv.length).toBe(metered ? 22 : 20)
        expect(argv[19]).toBe(chain.join(','))
        if (metered) expect(argv.slice(20)).toEqual(['100|10|400|4096|16|||||gpt-x', 12])
        for (let i = 0; i < 3; i++) {
          expect(keys[12 + i]).toBe(i < depth ? new Keys('dargs').agent(acct, chain[i]!) : keys[1])
        }
      }),
      { numRuns: 60 },
    )
  })

  test('a call that names a run sends ARGV[20..23] whole and the run at ARGV[24..27], its keys at KEYS[16..17]', async () => {
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.integer({ min: 0, max: 3 }), fc.boolean(), async (metered, depth, feeLane) => {
        const acct = newAccountId(null)
        const chain = Array.from({ length: depth }, (_, i) => `agt_up${i}`)
        const run = { id: 'job-7', max: 120, ttlS: 60, keptS: 600 }
        const m = metered ? { ...metering, ...(feeLane ? { feePct: 5 } : {}) } : undefined
        const { keys, argv } = await sent({ ...base(acct, 'agt_child'), chain, run, ...(m ? { metered: m } : {}) })
        const k = new Keys('dargs')
        expect(keys.length).toBe(17)
        expect(keys.slice(15)).toEqual([k.run(acct, 'job-7'), k.runs(acct)])
        expect(argv.length).toBe(27)
        expect(argv.slice(23)).toEqual(['job-7', 120, 60_000, 600_000])
        expect(argv[19]).toBe(chain.join(','))
        // Flat: every metering slot ''; metered: the model's part (the prices 29..31 of before and the
        // fee percent only on the owner's lane), the input bound, no ceiling.
        if (!metered) expect(argv.slice(20, 23)).toEqual(['', '', ''])
        else expect(argv.slice(20, 23)).toEqual([feeLane ? '100|10|400|4096|16|100|100|100|5|gpt-x' : '100|10|400|4096|16|||||gpt-x', 12, ''])
      }),
      { numRuns: 40 },
    )
  })
})
