/**
 * The comparison of one provider's day (src/provider-bill/compare.ts, docs/api.md §13d), over
 * random days: one row per model of either side, unavailable exactly when the bill is missing, a
 * drift percent that is the largest kind's |theirs − ours| / theirs, `drift` exactly above the
 * threshold, and an opened model named `unmetered` only when it is unmetered, ours is empty and
 * opened traffic ran.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { compareDay, driftPct } from '../../src/provider-bill/compare'
import type { BillTokens } from '../../src/provider-bill/tokens'

const tokens = fc.record({ input: fc.nat({ max: 10_000_000 }), cached: fc.nat({ max: 10_000_000 }), output: fc.nat({ max: 10_000_000 }) })
const model = fc.constantFrom('a', 'b', 'c', 'd', 'e')
const side = fc.dictionary(model, tokens).map((d) => new Map(Object.entries(d)))
const day = fc.record({
  ours: side,
  theirs: fc.option(side, { nil: null }),
  metered: fc.subarray(['a', 'b', 'c', 'd', 'e']).map((m) => new Set(m)),
  unmeteredRequests: fc.nat({ max: 5 }),
  thresholdPct: fc.double({ min: 0, max: 50, noNaN: true }),
})
const zero: BillTokens = { input: 0, cached: 0, output: 0 }

describe('compareDay', () => {
  test('one row per model of either side, each by the rules', () => {
    fc.assert(
      fc.property(day, (d) => {
        const rows = compareDay(d)
        const models = new Set([...d.ours.keys(), ...(d.theirs?.keys() ?? [])])
        expect(rows.map((r) => r.model).sort()).toEqual([...models].sort())
        for (const r of rows) {
          expect(r.ours).toEqual(d.ours.get(r.model) ?? zero)
          if (d.theirs === null) {
            expect(r).toMatchObject({ status: 'unavailable', theirs: null, driftPct: null })
            continue
          }
          const theirs = d.theirs.get(r.model) ?? zero
          expect(r.theirs).toEqual(theirs)
          const expected = Math.max(...(['input', 'cached', 'output'] as const).map((k) => (theirs[k] === 0 ? (r.ours[k] === 0 ? 0 : 100) : (Math.abs(theirs[k] - r.ours[k]) / theirs[k]) * 100)))
          expect(Math.abs(r.driftPct! - expected)).toBeLessThanOrEqual(0.005 + 1e-9)
          const opened = !d.metered.has(r.model) && !d.ours.has(r.model) && d.unmeteredRequests > 0
          expect(r.status).toBe(opened ? 'unmetered' : r.driftPct! > d.thresholdPct ? 'drift' : 'ok')
        }
      }),
      { numRuns: 500 },
    )
  })

  test('equal sides never drift; an unavailable bill never drifts', () => {
    fc.assert(
      fc.property(side, fc.nat({ max: 3 }), (s, opened) => {
        const same = compareDay({ ours: s, theirs: new Map([...s].map(([m, t]) => [m, { ...t }])), metered: new Set(s.keys()), unmeteredRequests: opened, thresholdPct: 0 })
        expect(same.every((r) => r.status === 'ok' && r.driftPct === 0)).toBe(true)
        const down = compareDay({ ours: s, theirs: null, metered: new Set(), unmeteredRequests: opened, thresholdPct: 0 })
        expect(down.every((r) => r.status === 'unavailable')).toBe(true)
      }),
    )
  })

  test('ours p% short of the bill on one kind is p% drift', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1000, max: 10_000_000 }), fc.integer({ min: 0, max: 100 }), (theirs, p) => {
        const ours = theirs - Math.round((theirs * p) / 100)
        expect(Math.abs(driftPct({ input: ours, cached: 5, output: 7 }, { input: theirs, cached: 5, output: 7 }) - p)).toBeLessThanOrEqual(0.06)
      }),
    )
  })
})
