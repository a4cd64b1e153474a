/**
 * Every script of lua/ loads on a real Redis, declares as many keys as its file name says, keeps
 * every key it touches in one hash slot (Redis Cluster), and documents itself.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import Redis from 'ioredis'
import { readScripts, SCRIPT_NAMES } from '../../src/redis/scripts'
import { REDIS_URL } from '../helpers/harness'

const redis = new Redis(REDIS_URL)
afterAll(() => redis.disconnect())

describe('lua/', () => {
  const scripts = readScripts()

  test('every script the code calls exists, and every script is called', () => {
    expect(scripts.map((s) => s.name).sort()).toEqual([...SCRIPT_NAMES].sort())
  })

  for (const s of scripts) {
    // A batch script (`keys: n`) documents its shared KEYS and the ones that repeat per item.
    const documented = s.numberOfKeys ?? Number(/KEYS\[(\d+) \+ /.exec(s.lua)?.[1] ?? 0)
    test(`${s.file}: loads, and its header documents KEYS[1..${s.numberOfKeys ?? `${documented} + per item`}] and ARGV`, async () => {
      const sha = (await redis.script('LOAD', s.lua)) as string
      expect(sha).toMatch(/^[0-9a-f]{40}$/)
      const header = /^--\[\[([\s\S]*?)\]\]/.exec(s.lua)?.[1] ?? ''
      expect(header).toContain(s.file.replace('.lua', ''))
      for (let i = 1; i <= documented; i++) expect(header).toContain(`KEYS[${i}]`)
      expect(header).not.toContain(`KEYS[${documented + 1}]`)
      if (s.numberOfKeys === null) expect(documented).toBeGreaterThan(0)
      expect(header).toMatch(/Returns/)
      // Shared pieces are spliced in before loading; nothing is left to include.
      expect(s.lua).not.toMatch(/^--@include /m)
      // Keys only through KEYS: no key names built inside a script.
      expect(s.lua).not.toMatch(/redis\.call\([^)]*'[a-z]+:\{/)
    })
  }
})
