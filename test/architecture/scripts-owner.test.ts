/**
 * One owner per contract (docs/architecture.md, "Rules the tests hold"): every Lua script is
 * called and its tuple decoded only by its wrapper in src/lua/, and the account hash is read only
 * through readAccount. The checker is also fed small trees that break each rule, so this test is
 * seen to fail when a rule is broken.
 */
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { readTree } from '../helpers/boundaries'
import { contractOwnerViolations } from '../helpers/contract-owners'

const ROOT = join(import.meta.dir, '..', '..')

describe('one owner per contract', () => {
  test('the source tree breaks no rule', () => {
    expect(contractOwnerViolations(readTree(ROOT))).toEqual([])
  })

  test('a script called outside src/lua/ is caught; its wrapper may call it', () => {
    const tree = new Map([
      ['src/paid-request/debit.ts', 'export async function debit(ctx) {\n  const reply = await ctx.scripts.debit(keys, argv)\n}\n'],
      ['src/auth/guard.ts', "const r = await this.ctx.scripts['authorize'](k, a)\n"],
      ['src/lua/debit.ts', 'export const runDebit = (ctx) => ctx.scripts.debit(keys, argv)\n'],
    ])
    expect(contractOwnerViolations(tree)).toEqual([
      'src/paid-request/debit.ts:2 calls a script: only its wrapper in src/lua/ may',
      'src/auth/guard.ts:1 calls a script: only its wrapper in src/lua/ may',
    ])
  })

  test('a reply read by position outside src/lua/ is caught', () => {
    const tree = new Map([
      ['src/paid-request/refund.ts', 'return { balance: Number(reply[1]) }\n'],
      ['src/lua/refund.ts', 'return { balance: Number(reply[1]) }\n'],
    ])
    expect(contractOwnerViolations(tree)).toEqual(['src/paid-request/refund.ts:1 reads a script reply by position: use the wrapper\'s named result'])
  })

  test('the account hash read outside its reader is caught; comments and the reader are not', () => {
    const tree = new Map([
      ['src/mandate/mandate.ts', "// once: redis.hget(keys.account(a), 'mref')\nconst mref = await s.ctx.redis.hget(s.ctx.keys.account(accountId), 'mref')\n"],
      ['src/governance/policies.ts', "const [cap] = await ctx.redis.hmget(ctx.keys.account(acct), 'daily_cap')\n"],
      ['src/redis/account-hash.ts', 'const raw = await ctx.redis.hmget(ctx.keys.account(accountId), ...fields)\n'],
    ])
    expect(contractOwnerViolations(tree)).toEqual([
      'src/mandate/mandate.ts:2 reads the account hash: use readAccount (src/redis/account-hash.ts)',
      'src/governance/policies.ts:1 reads the account hash: use readAccount (src/redis/account-hash.ts)',
    ])
  })
})
