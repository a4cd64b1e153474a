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
/** The library's `allowed` on one pattern, as debit-15 calls it. */
const PROBE = `${LIB}\nreturn allowed(ARGV[1], ARGV[2]) and 1 or 0`

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
})
