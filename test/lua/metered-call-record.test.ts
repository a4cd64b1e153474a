/**
 * A metered call's common record is one string, m|metered|state|price|day|at|agent|chain|brk|max_out|
 * clamped|p_in|p_cached|p_out|p_cw|p_cw1h|<bytes of model>|model|target, written with its TTL by one
 * SET (lua/debit.lua), where it was a hash of the same fields; a record written before the string
 * stays a hash for up to two days. Each reader takes both the same way: the debit's answer to a
 * resent script, refund.lua, record-calls.lua and settle.lua, checked here on twin accounts (one
 * left with the string, the other's record rewritten as the hash it replaced), and the sweeper's
 * parse (src/paid-request/call-record.ts; test/integration/sweeper.test.ts sweeps real calls).
 */
import { describe, expect, test } from 'bun:test'
import { hashToken } from '../../src/auth/tokens'
import { newAccountId } from '../../src/ledger/accounts'
import { runDebit, type DebitArgs, type DebitMetering } from '../../src/lua/debit'
import { runRecordCalls } from '../../src/lua/record-calls'
import { runRefund } from '../../src/lua/refund'
import { runSettle } from '../../src/lua/settle'
import { parseCallRecord } from '../../src/paid-request/call-record'
import { windowsAt } from '../../src/windows'
import { parseOutboxEntry } from '../../src/write-behind/outbox'
import { asHashRecord, callFields } from '../helpers/ledger'
import { scriptRig } from '../helpers/script-rig'

const { redis, keys, ctx } = scriptRig('mrecord')
const NOW = Date.UTC(2026, 10, 25, 12, 0, 30)
const W = windowsAt(NOW)
// Both may hold a '|' (and any byte): the model goes by its byte length, the target last.
const MODEL = 'gpt|test|é'
const TARGET = 'proxy:odd|target|ü'
const PARENT = 'agt_mp'
const AGENT = 'agt_mc'

const HOUSE: DebitMetering = { model: MODEL, inputBound: 1000, input: 150, cachedInput: 75, output: 600, ceiling: null, maxOutput: 16384, minOutput: 16 }
// The owner's lane with Anthropic's cache-write prices: `fee:<pct>` and p_cw, p_cw1h on the record.
const OWNER_LANE: DebitMetering = { ...HOUSE, cacheWrite: 190, cacheWrite1h: 300, feePct: 50 }

/** An account (and, for an agent's call, the agent under a parent, its breaker on). */
async function account(balance: number): Promise<string> {
  const acct = newAccountId(null)
  await redis.hset(keys.account(acct), { owner: hashToken(`owner-${acct}`), balance })
  await redis.hset(keys.agent(acct, PARENT), { token: hashToken(`p-${acct}`), state: 'active', spent_total: 0, depth: 1, budget: 10_000, carved: 5_000 })
  await redis.hset(keys.agent(acct, AGENT), { token: hashToken(`a-${acct}`), state: 'active', spent_total: 0, depth: 2, parent: PARENT, chain: PARENT, budget: 5_000 })
  return acct
}

type Who = 'owner' | 'agent'
let seq = 0
function debitArgs(acct: string, who: Who, metered: DebitMetering, extra: Partial<DebitArgs> = {}): DebitArgs {
  return {
    now: NOW, accountId: acct, agentId: who === 'agent' ? AGENT : null, chain: who === 'agent' ? [PARENT] : [],
    tokenHash: hashToken(who === 'agent' ? `a-${acct}` : `owner-${acct}`), target: TARGET, price: 0, unpriced: false,
    callId: `call_mrec_${++seq}`, day: W.day, rateWindow: W.rate, prevRateWindow: W.prevRate, rateLimit: 1_000,
    defaultDailyCap: 1_000_000, unpricedRequestCap: 100, fingerprint: 'fp', dayKeyTtlS: 172_800,
    breakerCreditsPerMinute: 1_000_000, breakerIdenticalPerMinute: 0, lowBalanceAlert: 0, abandonAt: NOW + 60_000, metered, ...extra,
  }
}

/** What an account's call leaves in Redis: its row, day spend, agents, breaker window, in-flight member and entries. */
async function stateOf(acct: string, callId: string) {
  const entries = (await redis.xrange(keys.outbox(keys.shardOf(acct)), '-', '+'))
    .flatMap(([id, f]) => parseOutboxEntry(id, f))
    .filter((e) => e.fields.acct === acct)
    .map((e) => ({ ...e.fields, acct: undefined }))
  return {
    account: await redis.hgetall(keys.account(acct)).then(({ owner: _, ...rest }) => rest),
    day: await redis.get(keys.spentToday(acct, W.day)),
    agent: await redis.hmget(keys.agent(acct, AGENT), 'spent_total', 'day', 'day_spent', 'carved'),
    parent: await redis.hmget(keys.agent(acct, PARENT), 'spent_total', 'day', 'day_spent', 'carved'),
    breaker: await redis.hgetall(keys.breakerWindow(acct, AGENT, Math.floor(NOW / 60_000))),
    inflight: (await redis.zscore(keys.inflight(keys.shardOf(acct)), `${acct}|${callId}`)) !== null,
    entries,
  }
}

const refundArgs = (acct: string, who: Who, callId: string, now = NOW + 1_000) => ({
  now, accountId: acct, agentId: who === 'agent' ? AGENT : null, callId, day: W.day, reason: 'provider_5xx', chain: who === 'agent' ? [PARENT] : [], at: NOW,
})

describe("a metered call's record", () => {
  for (const [lane, metered] of [['house', HOUSE], ['owner', OWNER_LANE]] as const) {
    for (const who of ['owner', 'agent'] as const) {
      test(`(${lane} lane, ${who}) is one string with its TTL, holding the fields the hash held`, async () => {
        const acct = await account(1_000)
        const a = debitArgs(acct, who, metered)
        const r = await runDebit(ctx, a)
        if (r.status !== 'ok') throw new Error(r.status)
        const key = keys.call(acct, a.callId)
        expect(await redis.type(key)).toBe('string')
        expect(await redis.ttl(key)).toBeGreaterThan(172_000)
        const agent = who === 'agent' ? AGENT : ''
        const chain = who === 'agent' ? PARENT : ''
        const brk = who === 'agent' ? '1' : ''
        const lanePart = lane === 'house' ? '1' : 'fee:50'
        const cw = lane === 'house' ? '|' : '190|300'
        expect(await redis.get(key)).toBe(
          `m|${lanePart}|debited|${r.price}|${W.day}|${NOW}|${agent}|${chain}|${brk}|${r.maxOut}|0|150|75|600|${cw}|${Buffer.byteLength(MODEL)}|${MODEL}|${TARGET}`,
        )
        // The same call with an Idempotency-Key keeps the hash: the string names the same fields.
        const twin = await account(1_000)
        const b = debitArgs(twin, who, metered, { idempotency: { key: 'k', fingerprint: 'f' } })
        expect(await runDebit(ctx, b)).toMatchObject({ status: 'ok', price: r.price, maxOut: r.maxOut })
        const { idem: _, ...hash } = await redis.hgetall(keys.call(twin, b.callId))
        expect(await callFields(redis, key)).toEqual(hash)
      })
    }
  }

  test('a resent debit answers the price, ceiling and clamp it holds, as the hash did, and debits nothing more', async () => {
    // 5 credits cannot reserve max_output (11): the script clamps the ceiling.
    for (const balance of [1_000, 5]) {
      for (const shape of ['string', 'hash'] as const) {
        const acct = await account(balance)
        const a = debitArgs(acct, 'agent', HOUSE)
        const first = await runDebit(ctx, a)
        if (first.status !== 'ok') throw new Error(first.status)
        expect(first.clamped).toBe(balance === 5)
        if (shape === 'hash') await asHashRecord(redis, keys.call(acct, a.callId))
        const before = await stateOf(acct, a.callId)
        expect(await runDebit(ctx, a)).toEqual({ ...first, refillDue: false })
        expect(await stateOf(acct, a.callId)).toEqual(before)
      }
    }
  })

  test('refund.lua releases the hold of the string as of the hash: same reply, same account, windows, chain and entries', async () => {
    for (const [metered, who] of [[HOUSE, 'agent'], [OWNER_LANE, 'owner'], [HOUSE, 'owner']] as const) {
      const states = []
      for (const shape of ['string', 'hash'] as const) {
        const acct = await account(1_000)
        const a = debitArgs(acct, who, metered)
        const d = await runDebit(ctx, a)
        if (d.status !== 'ok') throw new Error(d.status)
        const key = keys.call(acct, a.callId)
        if (shape === 'hash') await asHashRecord(redis, key)
        expect(await runRefund(ctx, refundArgs(acct, who, a.callId))).toEqual({ status: 'ok', balance: 1_000, amount: d.price })
        expect(await runRefund(ctx, refundArgs(acct, who, a.callId, NOW + 2_000))).toEqual({ status: 'already_applied', balance: 1_000 })
        // Refunded, the record keeps every other field, and its TTL.
        expect(await callFields(redis, key)).toMatchObject({ state: 'refunded', price: String(d.price), model: MODEL, target: TARGET, hold: '1' })
        expect(await redis.ttl(key)).toBeGreaterThan(172_000)
        states.push(await stateOf(acct, a.callId))
      }
      expect(states[0]!.account).toMatchObject({ balance: '1000', held: '0' })
      expect(states[0]).toEqual(states[1]!)
    }
  })

  test('record-calls.lua files it once, as a flat string: the bare word `filed`; a later refund gives nothing back', async () => {
    const acct = await account(1_000)
    const a = debitArgs(acct, 'owner', HOUSE)
    const d = await runDebit(ctx, a)
    if (d.status !== 'ok') throw new Error(d.status)
    const rec = { call_id: a.callId, slug: TARGET, agent_id: null, charged: 0, refunded: false, outcome: 'ok', http_status: 200, latency_ms: 1, at: new Date(NOW).toISOString(), account_id: acct }
    const filing = { accountId: acct, callId: a.callId, agentId: null, recordJson: JSON.stringify(rec), charged: 0, organic: false, idempotency: null }
    expect(await runRecordCalls(ctx, [filing, filing], { recentCalls: 200, settledTtlS: 300 })).toEqual([{ status: 'ok' }, { status: 'already_applied' }])
    expect(await redis.get(keys.call(acct, a.callId))).toBe('filed')
    expect(await runRefund(ctx, refundArgs(acct, 'owner', a.callId))).toEqual({ status: 'already_applied', balance: 1_000 - d.price })
  })
})

describe('settle.lua on the string record', () => {
  // The call's usage: a cached and cache-write share on the owner's lane (its prices on the record).
  const USAGE = { house: { input: 800, cached: 200, output: 3000 }, owner: { input: 500, cached: 100, output: 2000, cache_write: 300, cache_write_1h: 100 } }
  const FILE = { recordHead: '{"call_id":"c","slug":"s"', organic: true, recentCalls: 200, settledTtlS: 300 }
  for (const [lane, metered] of [['house', HOUSE], ['owner', OWNER_LANE]] as const) {
    for (const who of ['owner', 'agent'] as const) {
      for (const filed of [true, false]) {
        test(`(${lane} lane, ${who}, ${filed ? 'filed' : 'not filed'}) charges, releases and files it as the old hash: same reply, account, windows, chain, list and entries`, async () => {
          const states = []
          const replies = []
          // Twin calls (a call record's key is the shard's, not the account's: two ids), compared
          // with the id replaced.
          const base = `call_mrec_settle_${++seq}`
          for (const shape of ['string', 'hash'] as const) {
            const callId = `${base}${shape[0]}`
            const acct = await account(1_000)
            const d = await runDebit(ctx, debitArgs(acct, who, metered, { callId }))
            if (d.status !== 'ok') throw new Error(d.status)
            const key = keys.call(acct, callId)
            if (shape === 'hash') await asHashRecord(redis, key)
            const args = { now: NOW + 5_000, accountId: acct, agentId: who === 'agent' ? AGENT : null, chain: who === 'agent' ? [PARENT] : [], callId, day: W.day, at: NOW,
              tokens: USAGE[lane], source: 'provider' as const, file: filed ? FILE : undefined }
            const r = await runSettle(ctx, args)
            expect(r).toMatchObject({ status: 'ok' })
            // Settled once: again, already applied; nor can a refund give anything back now.
            expect(await runSettle(ctx, { ...args, now: NOW + 6_000 })).toMatchObject({ status: 'already_applied' })
            expect(await runRefund(ctx, refundArgs(acct, who, callId, NOW + 7_000))).toMatchObject({ status: 'already_applied' })
            // Settled but not filed, the record keeps the rest: a resent debit answers what it reserved.
            if (!filed) expect(await runDebit(ctx, debitArgs(acct, who, metered, { callId }))).toMatchObject({ status: 'ok', price: d.price, maxOut: d.maxOut, clamped: d.clamped })
            replies.push(r)
            const record = await callFields(redis, key)
            const state = { ...(await stateOf(acct, callId)), list: await redis.lrange(keys.recentCalls(acct), 0, -1), state: record?.state, ttl: (await redis.ttl(key)) > 1_000 }
            states.push(JSON.parse(JSON.stringify(state).replaceAll(callId, 'CALL')))
          }
          expect(replies[0]).toEqual(replies[1]!)
          expect(states[0]).toEqual(states[1]!)
          expect(states[0]!.state).toBe(filed ? 'filed' : 'settled')
          expect(states[0]!.account.held).toBe('0')
        })
      }
    }
  }

  test('a string record the settle is not for answers alone: a flat one not_found, a damaged one an error, nothing of either written', async () => {
    const acct = await account(1_000)
    const d = await runDebit(ctx, debitArgs(acct, 'owner', HOUSE, { callId: 'c_ok' }))
    if (d.status !== 'ok') throw new Error(d.status)
    const flat = `debited|5|${W.day}|${NOW}||||m|1|debited`
    const damaged = `m|1|debited|9|${W.day}|${NOW}||||100|0|150|75|600|||40|short|x`
    await redis.set(keys.call(acct, 'c_flat'), flat, 'EX', 600)
    await redis.set(keys.call(acct, 'c_damaged'), damaged, 'EX', 600)
    const base = { now: NOW + 5_000, accountId: acct, agentId: null, chain: [], day: W.day, at: NOW, tokens: USAGE.house, source: 'provider' as const }
    const [f, x, ok] = await Promise.allSettled(['c_flat', 'c_damaged', 'c_ok'].map((callId) => runSettle(ctx, { ...base, callId })))
    expect(f).toEqual({ status: 'fulfilled', value: { status: 'not_found' } })
    expect(x?.status).toBe('rejected')
    expect(ok).toMatchObject({ status: 'fulfilled', value: { status: 'ok' } })
    expect(await redis.get(keys.call(acct, 'c_flat'))).toBe(flat)
    expect(await redis.get(keys.call(acct, 'c_damaged'))).toBe(damaged)
  })
})

describe('the string record parsed (the sweeper, the tests)', () => {
  test('a flat record is never read as a metered one, nor the reverse, whatever its target and model hold', () => {
    // A flat target that looks like a metered record after its '|'.
    const flat = `debited|5|20000|${NOW}|agt||1|m|1|debited|7|1|2|x||||||||3|abc|t`
    expect(parseCallRecord(Buffer.from(flat))).toEqual({ state: 'debited', price: '5', day: '20000', at: String(NOW), agent: 'agt', brk: '1', target: 'm|1|debited|7|1|2|x||||||||3|abc|t' })
    const model = 'a|b\nc|é'
    const metered = `m|fee:5|refunded|9|20000|${NOW}||agt_1,agt_2||100|1|150|75|600|||${Buffer.byteLength(model)}|${model}|x|y`
    expect(parseCallRecord(Buffer.from(metered))).toEqual({
      metered: 'fee:5', state: 'refunded', price: '9', day: '20000', at: String(NOW), agent: '', chain: 'agt_1,agt_2', max_out: '100', clamped: '1',
      p_in: '150', p_cached: '75', p_out: '600', model, target: 'x|y', hold: '1',
    })
    expect(parseCallRecord(Buffer.from('filed'))).toBe('filed')
    // A length past the string, or a byte after the model other than '|': a damaged record, read as none.
    expect(parseCallRecord(Buffer.from(`m|1|debited|9|1|2||||1|0|1|1|1|||9|ab|c`))).toBeNull()
    expect(parseCallRecord(Buffer.from(`m|1|debited|9|1|2||||1|0|1|1|1|||1|ab|c`))).toBeNull()
    expect(parseCallRecord(Buffer.from('debited|5'))).toBeNull()
  })
})
