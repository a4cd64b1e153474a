/**
 * lua/lib/allowlist.lua's glob walk against the obvious reference (a '*' is any run of characters,
 * everything else itself), over random globs and names: the linear matcher that replaced the Lua
 * pattern must answer exactly what a glob means, '*' and '.' in names included (a sub-agent's
 * pattern is checked against its parent's as a name).
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import Redis from 'ioredis'

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const redis = new Redis(REDIS_URL)
afterAll(() => redis.disconnect())

const LIB = readFileSync(join(import.meta.dir, '..', '..', 'lua', 'lib', 'allowlist.lua'), 'utf8')
/** The library's `allowed` on a list (one pattern a line), as debit.lua calls it. */
const PROBE = `${LIB}\nreturn allowed(ARGV[1], ARGV[2]) and 1 or 0`
/** The same, with the walk steps it took from the budget a script run starts with. */
const SPENT = `${LIB}\nlocal budget = glob_left\nlocal ok = allowed(ARGV[1], ARGV[2])\nreturn {ok and 1 or 0, budget - glob_left}`

const reference = (glob: string, name: string): boolean =>
  new RegExp(`^${glob.replace(/[.*+?^${}()|[\]\\/:-]/g, (c) => (c === '*' ? '.*' : `\\${c}`))}$`, 's').test(name)

const glob = fc.array(fc.constantFrom('a', 'b', '.', '*', '-'), { maxLength: 9 }).map((cs) => cs.join(''))
const name = fc.array(fc.constantFrom('a', 'b', '.', '*', '-'), { maxLength: 12 }).map((cs) => cs.join(''))

describe('allowlist globs (lua/lib/allowlist.lua)', () => {
  test('the glob walk answers what the glob means', async () => {
    const sha = (await redis.script('LOAD', PROBE)) as string
    await fc.assert(
      fc.asyncProperty(glob.filter((g) => g.length > 0), name, async (g, n) => {
        const got = (await redis.evalsha(sha, 0, g, n)) === 1
        expect(got).toBe(reference(g, n))
      }),
      { numRuns: 2000 },
    )
  })

  test('the walks of one run have a budget: a hostile list is refused in bounded time, never let through', async () => {
    // Each glob walks ~240 steps against an 80-character name (it fails only at the name's end); 500
    // of them pass the budget before the '*' that would admit the name is reached.
    const hostile = Array.from({ length: 500 }, (_, i) => `*${'a'.repeat(77)}${i % 10}b`)
    const name = 'a'.repeat(80)
    const [ok, spent] = (await redis.eval(SPENT, 0, [...hostile, '*'].join('\n'), name)) as [number, number]
    expect(ok).toBe(0)
    // The budget, and the one step each remaining glob takes to see it spent: nothing more.
    expect(spent).toBeLessThanOrEqual(100_000 + hostile.length + 1)
    // The same '*' alone, or after a few hostile globs, admits the name.
    expect(((await redis.eval(SPENT, 0, '*', name)) as number[])[0]).toBe(1)
    expect(((await redis.eval(SPENT, 0, [...hostile.slice(0, 5), '*'].join('\n'), name)) as number[])[0]).toBe(1)
  })

  test('a list a person writes spends a small part of the budget', async () => {
    // 100 globs of the shapes the docs show, leading stars included, against a long slug.
    const list = Array.from({ length: 100 }, (_, i) => (i % 2 ? `*.search${i}` : `svc${i}.*`))
    const [ok, spent] = (await redis.eval(SPENT, 0, list.join('\n'), 'provider-with-a-long-name.search-and-more')) as [number, number]
    expect(ok).toBe(0)
    expect(spent).toBeLessThan(10_000)
  })
})
