/**
 * The money invariants of the REST path hold for MCP tool calls under concurrency: 200 concurrent
 * paid tool calls on a balance that covers 50 → exactly 50 succeed, the balance ends at exactly 0,
 * and the ledger sums (Redis = outbox ∪ Postgres, one debit per call). A fast-check property fires
 * random concurrent mixes (both paid tools, charged, refunded and unaffordable capabilities,
 * idempotency_key replays) and checks that the balance is 500 − Σ the distinct charged calls.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { testCatalog } from '../helpers/harness'
import { assertLedger } from '../helpers/invariants'
import { redisBalance } from '../helpers/ledger'
import { callTool, mcpRig, type ToolOutcome } from '../helpers/mcp'

const PRICE = 10 // test.ten: the 500 signup credits cover exactly 50 calls

const rig = mcpRig({
  catalog: (url) => {
    const c = testCatalog(url)
    const echo = c.capabilities.find((x) => x.slug === 'test.echo')!
    c.capabilities.push({ ...echo, slug: 'test.ten', price: PRICE, description: 'echo for ten credits' })
    return c
  },
})
const connect = rig.connect

describe('concurrent MCP tool calls', () => {
  test('200 at once on a balance that covers 50: exactly 50 succeed, the balance is exact, the ledger sums', async () => {
    const a = await rig.t.signup()
    const c = await connect(a.token)
    // Half through call_capability, half through the capability's own tool: one debit path for both.
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (i % 2 ? callTool(c, 'call_capability', { slug: 'test.ten', params: { i } }) : callTool(c, 'test_ten', { i }))),
    )
    const ok = answers.filter((r) => !r.isError)
    const refused = answers.filter((r) => r.isError)
    expect(ok).toHaveLength(50)
    expect(refused.every((r) => r.json.error === 'PAYMENT_REQUIRED')).toBe(true)
    const ids = ok.map((r) => r.json.call_id as string)
    expect(new Set(ids).size).toBe(50)
    expect(ok.every((r) => r.json.charged === PRICE)).toBe(true)
    expect(Math.min(...ok.map((r) => r.json.balance as number))).toBe(0)
    expect(await redisBalance(rig.t, a.account_id)).toBe(0)
    await assertLedger(rig.t.s, [{ account: a.account_id, balance: 0, debits: ids }])
  })

  test('property: random concurrent mixes keep balance = 500 − Σ distinct charged calls, and the ledger sums', async () => {
    const op = fc.record({
      tool: fc.constantFrom('call_capability', 'direct'),
      slug: fc.constantFrom('test.ten', 'test.echo', 'test.fail', 'test.pricey'),
      key: fc.option(fc.constantFrom('k1', 'k2', 'k3'), { nil: undefined }),
    })
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 60 }), async (ops) => {
        const a = await rig.t.signup()
        const c = await connect(a.token)
        // A key always names the same request (the first slug drawn for it), so a reuse is a replay.
        const slugOfKey = new Map<string, string>()
        const answers: ToolOutcome[] = await Promise.all(
          ops.map((o) => {
            const slug = o.key ? (slugOfKey.get(o.key) ?? (slugOfKey.set(o.key, o.slug), o.slug)) : o.slug
            if (o.tool === 'direct' && !o.key) return callTool(c, slug.replace('.', '_'), {})
            return callTool(c, 'call_capability', { slug, params: {}, ...(o.key ? { idempotency_key: o.key } : {}) })
          }),
        )
        const charged = new Map<string, number>()
        for (const r of answers) {
          if (r.isError) {
            // A refusal names a reason the ledger explains; PROVIDER_ERROR says it was refunded.
            expect(['PAYMENT_REQUIRED', 'PROVIDER_ERROR', 'CONFLICT']).toContain(r.json.error)
            if (r.json.error === 'PROVIDER_ERROR') expect(r.json.refunded).toBe(true)
            continue
          }
          charged.set(r.json.call_id, r.json.charged)
        }
        const spent = [...charged.values()].reduce((x, y) => x + y, 0)
        expect(spent).toBeLessThanOrEqual(500)
        expect(await redisBalance(rig.t, a.account_id)).toBe(500 - spent)
        await assertLedger(rig.t.s, [{ account: a.account_id, balance: 500 - spent, debits: [...charged.keys()] }])
      }),
      { numRuns: 12 },
    )
  })
})
