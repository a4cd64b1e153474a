/**
 * A flat debit's outbox entry is packed (lua/debit.lua): kind `packed_debit`, one field `d` of its
 * values joined by '|', the target last. Every reader goes through parseOutboxEntry
 * (src/write-behind/outbox.ts), which must give the `debit` entry of the ten-field form, field for
 * field, and still read that form; a `d` it cannot unpack keeps its kind, which no sink takes.
 */
import { describe, expect, test } from 'bun:test'
import { hashToken } from '../../src/auth/tokens'
import { runDebit, type DebitArgs } from '../../src/lua/debit'
import { windowsAt } from '../../src/windows'
import { parseOutboxEntry } from '../../src/write-behind/outbox'
import { scriptRig } from '../helpers/script-rig'

const { redis, keys, ctx } = scriptRig('dentry')

async function debitOnce(acct: string, agent: string | null, target: string, price: number): Promise<string[]> {
  const now = Date.now()
  const w = windowsAt(now)
  await redis.hset(keys.account(acct), { owner: hashToken(`owner-${acct}`), balance: 1000 })
  if (agent) await redis.hset(keys.agent(acct, agent), { token: hashToken(`tok-${agent}`), name: 'w', created: 1, v: 1, state: 'active', spent_total: 0, depth: 1 })
  const args: DebitArgs = {
    now, accountId: acct, agentId: agent, tokenHash: hashToken(agent ? `tok-${agent}` : `owner-${acct}`), target, price, unpriced: false,
    callId: `call_${acct}`, day: w.day, rateWindow: w.rate, prevRateWindow: w.prevRate, rateLimit: 100, defaultDailyCap: 1_000_000,
    unpricedRequestCap: 100, dayKeyTtlS: 172_800, breakerCreditsPerMinute: 0, breakerIdenticalPerMinute: 0, lowBalanceAlert: 0, abandonAt: now + 60_000,
  }
  expect((await runDebit(ctx, args)).status).toBe('ok')
  const entries = await redis.xrange(keys.outbox(keys.shardOf(acct)), '-', '+')
  const mine = entries.filter(([, f]) => f.join('\n').includes(`call_${acct}`))
  expect(mine.length).toBe(1)
  return [mine[0]![0], ...mine[0]![1]]
}

describe('the debit outbox entry', () => {
  test('is packed, and parses to the debit entry of the ten-field form', async () => {
    for (const [agent, target, price] of [[null, 'bench.search', 5], ['agt_e1', 'proxy:odd|target|é', 0]] as const) {
      const acct = `acc_07_dentry${price}`
      const [sid = '', ...raw] = await debitOnce(acct, agent, target, price)
      expect(raw.length).toBe(4)
      expect(raw.slice(0, 3)).toEqual(['kind', 'packed_debit', 'd'])
      const at = raw[3]!.split('|')[5]!
      const parsed = parseOutboxEntry(sid, raw)
      expect(parsed).toEqual([
        {
          streamId: sid,
          kind: 'debit',
          fields: { kind: 'debit', id: `call_${acct}:debit`, acct, agent: agent ?? '', amount: price ? `-${price}` : '0', bal: String(1000 - price), call: `call_${acct}`, target, at },
        },
      ])
      // The ten-field form, as debit.lua wrote it before, parses to the same entry.
      const old = ['kind', 'debit', 'id', `call_${acct}:debit`, 'acct', acct, 'agent', agent ?? '', 'amount', price ? `-${price}` : '0', 'bal', String(1000 - price), 'call', `call_${acct}`, 'target', target, 'at', at]
      expect(parseOutboxEntry(sid, old)).toEqual(parsed)
    }
  })

  test('a replayed one keeps its orig_id; one whose `d` does not unpack keeps its kind', () => {
    expect(parseOutboxEntry('2-0', ['kind', 'packed_debit', 'd', 'acc_x||-3|7|call_x|123|a.b', 'orig_id', '1-0'])[0]!.fields).toMatchObject({ id: 'call_x:debit', orig_id: '1-0', target: 'a.b' })
    for (const d of ['acc_x|-3|7|call_x', '', 'acc_x||-3|7||123|a.b']) {
      expect(parseOutboxEntry('2-0', ['kind', 'packed_debit', 'd', d]).map((e) => e.kind)).toEqual(['packed_debit'])
    }
    expect(parseOutboxEntry('2-0', ['kind', 'packed_debit']).map((e) => e.kind)).toEqual(['packed_debit'])
  })
})

describe("a batch's debits entry (packed_debits)", () => {
  test('parses to one debit entry per line, in order, each as its packed_debit alone, all under the one stream id', () => {
    const lines = ['acc_x||-3|97|call_1|123|a.b', 'acc_x|agt_1|-4|93|call_2|124|proxy:odd|t|é', 'acc_y||0|50|call_3|125|c.d']
    const parsed = parseOutboxEntry('5-0', ['kind', 'packed_debits', 'd', lines.join('\n'), 'orig_id', '4-1'])
    expect(parsed).toEqual(lines.map((d) => parseOutboxEntry('5-0', ['kind', 'packed_debit', 'd', d, 'orig_id', '4-1'])[0]!))
    expect(parsed.map((e) => [e.streamId, e.kind, e.fields.id, e.fields.target, e.fields.orig_id])).toEqual([
      ['5-0', 'debit', 'call_1:debit', 'a.b', '4-1'],
      ['5-0', 'debit', 'call_2:debit', 'proxy:odd|t|é', '4-1'],
      ['5-0', 'debit', 'call_3:debit', 'c.d', '4-1'],
    ])
  })

  test('one line that does not unpack keeps the whole entry its kind (dead-lettered whole, never half filed)', () => {
    for (const d of ['acc_x||-3|97|call_1|123|a.b\nacc_x|-3|7|call_2', 'acc_x||-3|97|call_1|123|a.b\n', '']) {
      const raw = ['kind', 'packed_debits', 'd', d]
      expect(parseOutboxEntry('5-0', raw)).toEqual([{ streamId: '5-0', kind: 'packed_debits', fields: { kind: 'packed_debits', d } }])
    }
  })
})
