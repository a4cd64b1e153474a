/**
 * A paid call's id is led by its time (src/auth/tokens.ts timeLedId): ids minted later sort later,
 * byte by byte (as Postgres' primary keys under collate "C" and JavaScript compare them), so a
 * call's rows land at the right edge of their tables' primary keys. Still 22 base64url characters
 * after `call_`, as the random ids were.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { timeLedId } from '../../src/auth/tokens'
import { startTestApp, type TestApp } from '../helpers/harness'

const ID = /^[A-Za-z0-9_-]{22}$/
const bytes = (s: string) => Buffer.from(s)

test('later ms sort later, byte by byte; the same ms share the head and differ in the rest', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 47 }), fc.integer({ min: 1, max: 2 ** 40 }), (ms, dt) => {
      const a = timeLedId(ms)
      const b = timeLedId(ms + dt)
      expect(a).toMatch(ID)
      expect(b).toMatch(ID)
      expect(Buffer.compare(bytes(a), bytes(b))).toBe(-1)
      const again = timeLedId(ms)
      expect(again.slice(0, 8)).toBe(a.slice(0, 8))
      expect(again).not.toBe(a)
    }),
    { numRuns: 2000 },
  )
  // The digits' edges: 0, each carry, and this century's instants.
  const edges = [0, 1, 63, 64, 65, 4095, 4096, 1_795_984_709_121, 64 ** 7 - 1, 64 ** 7, 64 ** 8 - 1]
  for (let i = 1; i < edges.length; i++) expect(Buffer.compare(bytes(timeLedId(edges[i - 1]!)), bytes(timeLedId(edges[i]!)))).toBe(-1)
  expect(timeLedId(0).slice(0, 8)).toBe('--------')
})

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
}, 30_000)
afterAll(async () => {
  await t?.close()
})

test("a paid call's id is call_ and a time-led id of its debit's instant: a later call's sorts after", async () => {
  const a = await t.signup()
  const ids: string[] = []
  for (const step of [0, 1, 0, 60_000]) {
    t.clock.advance(step)
    const res = await t.req('POST', '/v1/call/test.echo', { token: a.token, body: {} })
    expect(res.status).toBe(200)
    const id = res.body.call_id as string
    expect(id).toMatch(/^call_[A-Za-z0-9_-]{22}$/)
    expect(id.slice(5, 13)).toBe(timeLedId(t.clock.now()).slice(0, 8))
    ids.push(id)
  }
  // Each later call's id sorts after the one before; the third shares the second's ms, so only its head.
  const cmp = (x: string, y: string) => Buffer.compare(bytes(x), bytes(y))
  expect(cmp(ids[0]!, ids[1]!)).toBe(-1)
  expect(ids[2]!.slice(0, 13)).toBe(ids[1]!.slice(0, 13))
  expect(cmp(ids[2]!, ids[3]!)).toBe(-1)
  expect(new Set(ids).size).toBe(ids.length)
})
