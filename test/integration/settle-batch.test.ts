/**
 * Metered settles are sent in batches (settle.lua, src/lua/settle.ts): the settles a shard asks for in
 * one turn of the event loop share one script. Concurrent settles of an owner and of agents two
 * levels deep (their keys laid out by their chains) each charge §7's formula once — the remainder
 * carried from one call to the next of the same account inside a batch — release the rest from the
 * balance and from every ancestor's spent_total, and fewer scripts run than calls settle. A chain
 * that is not the call's fails that settle alone.
 *
 *   bun test test/integration/settle-batch.test.ts
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { SETTLE_ARGS_PER_CALL, SETTLE_SHARED_ARGS } from '../../src/lua/settle'
import type { Principal } from '../../src/auth/principal'
import { runSettle } from '../../src/lua/settle'
import { startTestApp, type TestApp } from '../helpers/harness'
import { assertLedger, drain } from '../helpers/invariants'
import { callFields } from '../helpers/ledger'
import { chargesOf, costMicro, openMeteredCall } from '../helpers/metering'
import { countScript } from '../helpers/script-count'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t?.close()
})

const PRICE = { input: 1234, cached_input: 567, output: 8901 }
const INPUT_BOUND = 1000
const CEILING = 1000

/** Counts the settle.lua scripts sent and the calls they carried (2 shared args, then 10 a call). */
const countSettles = () => countScript(t, 'settle', (_, argv) => (argv.length - SETTLE_SHARED_ARGS) / SETTLE_ARGS_PER_CALL)

const open = (principal: Principal) =>
  openMeteredCall(t.s, principal, { input: PRICE.input, cachedInput: PRICE.cached_input, output: PRICE.output }, { inputBound: INPUT_BOUND, ceiling: CEILING })

const agentField = async (acct: string, agent: string, f: string) => Number((await t.s.ctx.redis.hget(t.s.ctx.keys.agent(acct, agent), f)) ?? 0)

test('concurrent settles of an owner and of sub-agents: each charged once by the formula, in fewer scripts than calls', async () => {
  const owner = await t.signup()
  const other = await t.signup()
  const root = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'root', budget: 400 } })).body
  const child = (await t.req('POST', '/v1/agents', { token: root.token, body: { name: 'child', budget: 300 } })).body
  const who = [owner.token, other.token, child.token, owner.token, child.token, other.token, owner.token, child.token]
  const principals = await Promise.all(who.map(async (tok) => (await t.s.guard.tokens.resolve(tok))!))
  const calls: Awaited<ReturnType<typeof open>>[] = []
  for (const p of principals) calls.push(await open(p))
  const reserved = calls[0]!.price
  expect(await agentField(owner.account_id, root.id, 'spent_total')).toBe(3 * reserved)

  const usage = calls.map((_, i) => ({ input: 100 + 37 * i, cached: 11 * i, output: 50 + 101 * i }))
  const seen = countSettles()
  const settled = await Promise.all(calls.map((c, i) => c.settle('ok', { usage: { tokens: usage[i]!, source: 'provider' } })))
  seen.restore()
  expect(seen.calls).toBe(calls.length)
  expect(seen.scripts).toBeLessThan(seen.calls)

  // Per account, in the order the calls were sent: Σ charged and the remainder left, to the micro-credit.
  for (const acct of [owner.account_id, other.account_id]) {
    const mine = calls.map((c, i) => ({ c, i })).filter(({ c }) => c.price === reserved && principals[calls.indexOf(c)]!.accountId === acct)
    const { charged, r } = chargesOf(mine.map(({ i }) => costMicro(PRICE, usage[i]!)))
    expect(mine.map(({ i }) => settled[i]!.charged)).toEqual(charged)
    expect(Number(await t.s.ctx.redis.hget(t.s.ctx.keys.account(acct), 'mc_rem'))).toBe(r)
  }
  // The child's and its root's spent_total keep only what was charged.
  const childCharged = who.map((tok, i) => (tok === child.token ? settled[i]!.charged : 0)).reduce((a, b) => a + b, 0)
  expect(await agentField(owner.account_id, child.id, 'spent_total')).toBe(childCharged)
  expect(await agentField(owner.account_id, root.id, 'spent_total')).toBe(childCharged)

  // A settle asked for again changes nothing.
  const again = await runSettle(t.s.ctx, { now: Date.now(), accountId: owner.account_id, agentId: null, callId: calls[0]!.callId, day: 0, tokens: usage[0]!, source: 'provider' })
  expect(again.status).toBe('already_applied')

  await drain(t.s.flusher)
  const owed = (acct: string) => calls.filter((_, i) => principals[i]!.accountId === acct).map((c) => c.callId)
  // The reservation was a hold: each call has one debit, of its charge, and no refund.
  await assertLedger(t.s, [owner, other].map((a) => ({ account: a.account_id })), { debits: [...owed(owner.account_id), ...owed(other.account_id)] })
  for (const a of [owner, other]) expect(await t.s.ctx.redis.hget(t.s.ctx.keys.account(a.account_id), 'held')).toBe('0')
})

test('a chain that is not the call\'s fails that settle alone; the rest of its batch settles', async () => {
  const a = await t.signup()
  const principal = (await t.s.guard.tokens.resolve(a.token))!
  const [x, y] = [await open(principal), await open(principal)]
  const tokens = { input: 10, cached: 0, output: 10 }
  const base = { now: Date.now(), accountId: a.account_id, agentId: null, day: 0, tokens, source: 'provider' as const }
  const [bad, good] = await Promise.allSettled([runSettle(t.s.ctx, { ...base, callId: x.callId, chain: ['ag_nobody'] }), runSettle(t.s.ctx, { ...base, callId: y.callId, chain: [] })])
  expect(bad.status).toBe('rejected')
  expect(String((bad as PromiseRejectedResult).reason)).toContain('is not the call')
  expect(good.status).toBe('fulfilled')
  expect((good as PromiseFulfilledResult<{ status: string }>).value.status).toBe('ok')
  expect((await callFields(t.s.ctx.redis, t.s.ctx.keys.call(a.account_id, x.callId)))?.state).toBe('debited')
})
