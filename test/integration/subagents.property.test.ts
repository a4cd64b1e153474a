/**
 * Siblings racing for a parent's last credits (docs/api.md §8), as a fast-check property over random
 * trees and random concurrent calls (charged and refunded): no subtree ever spends past the budget
 * of its root — checked on atomic snapshots taken while the calls run, and on the ledger after —
 * spent_total is exactly the subtree's debits − refunds, and every entry reaches Postgres once.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { assertLedger } from '../helpers/invariants'
import { startTestApp, type TestApp } from '../helpers/harness'
import { accountLedgers } from '../../src/recovery/reconcile'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

interface Node {
  id: string
  token: string
  budget: number
  /** Ancestors' ids, parent first. */
  chain: string[]
}

/** A tree shape: for each new agent, the index of its parent among those before it (or -1: the operator's). */
const treeShape = fc.array(fc.record({ parent: fc.nat(), top: fc.boolean(), budget: fc.integer({ min: 0, max: 40 }) }), { minLength: 2, maxLength: 7 })
const callsArb = fc.array(fc.record({ who: fc.nat(), slug: fc.constantFrom('test.echo', 'test.cheap', 'test.fail', 'test.echo') }), { minLength: 10, maxLength: 40 })

async function buildTree(owner: string, shape: { parent: number; top: boolean; budget: number }[]): Promise<Node[]> {
  const nodes: Node[] = []
  for (const [i, s] of shape.entries()) {
    const candidates = nodes.filter((n) => n.chain.length < 3)
    const parent = i === 0 || s.top || candidates.length === 0 ? null : candidates[s.parent % candidates.length]!
    const r = await t.req('POST', '/v1/agents', { token: parent ? parent.token : owner, body: { name: `n${i}`, budget: s.budget } })
    // A carve past what the parent has left is refused; the tree is whatever was allowed.
    if (r.status !== 201) {
      expect(r.body.rule).toBe('exceeds_parent')
      continue
    }
    nodes.push({ id: r.body.id, token: r.body.token, budget: s.budget, chain: parent ? [parent.id, ...parent.chain] : [] })
  }
  return nodes
}

/** Every agent's spent_total in one MULTI: a consistent snapshot of the tree at one instant. */
async function snapshot(acct: string, nodes: Node[]): Promise<Map<string, number>> {
  const m = t.redis.multi()
  for (const n of nodes) m.hget(t.s.ctx.keys.agent(acct, n.id), 'spent_total')
  const res = (await m.exec())!
  return new Map(nodes.map((n, i) => [n.id, Number(res[i]![1] ?? 0)]))
}

describe('sub-agent budgets under concurrency', () => {
  test('Σ spend of any subtree ≤ the budget of its root, at every moment; every entry reaches Postgres once', async () => {
    await fc.assert(
      fc.asyncProperty(treeShape, callsArb, async (shape, calls) => {
        const owner = await t.signup()
        const nodes = await buildTree(owner.token, shape)
        const subtree = (root: Node) => nodes.filter((n) => n.id === root.id || n.chain.includes(root.id))
        const snaps: Map<string, number>[] = []
        let running = true
        const sampler = (async () => {
          while (running) snaps.push(await snapshot(owner.account_id, nodes))
        })()
        const answers = await Promise.all(
          calls.map((c) => t.req('POST', `/v1/call/${c.slug}`, { token: nodes[c.who % nodes.length]!.token, body: { q: 'x' } })),
        )
        running = false
        await sampler
        snaps.push(await snapshot(owner.account_id, nodes))
        for (const a of answers) expect([200, 402, 403, 502, 503]).toContain(a.status)
        for (const a of answers.filter((x) => x.status === 403)) expect(a.body.rule).toBe('agent_budget')

        // At every sampled instant, each agent's spent_total (its subtree's spend) is within its budget.
        for (const s of snaps) for (const n of nodes) expect(s.get(n.id)!).toBeLessThanOrEqual(n.budget)

        // After: the ledger says the same — Σ debits − refunds of each subtree = its root's spent_total ≤ budget.
        const led = (await accountLedgers(t.s.ctx, t.s.db.db, [owner.account_id])).get(owner.account_id)!
        const spentBy = new Map<string, number>()
        const refunded = new Set(led.lines.filter((l) => l.kind === 'refund' && l.callId).map((l) => l.callId!))
        for (const l of led.lines) if (l.kind === 'debit' && l.agent && !refunded.has(l.callId!)) spentBy.set(l.agent, (spentBy.get(l.agent) ?? 0) - l.amount)
        const last = snaps.at(-1)!
        for (const n of nodes) {
          const sum = subtree(n).reduce((a, d) => a + (spentBy.get(d.id) ?? 0), 0)
          expect(sum).toBeLessThanOrEqual(n.budget)
          expect(last.get(n.id)).toBe(sum)
        }
        await assertLedger({ ctx: t.s.ctx, db: t.s.db, flusher: t.s.flusher }, [{ account: owner.account_id }])
      }),
      { numRuns: 12 },
    )
  }, 120_000)
})
