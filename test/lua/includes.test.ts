/**
 * `--@include <name>` (src/redis/scripts.ts): a library is spliced in where a script names it, and a
 * library may include another (lib/raises.lua includes lib/raised-row.lua); one that includes itself,
 * directly or through another, is refused when the scripts are read.
 *
 *   bun test test/lua/includes.test.ts
 */
import { afterAll, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readScripts } from '../../src/redis/scripts'

const dirs: string[] = []
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

function luaDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'pab-includes-'))
  dirs.push(dir)
  mkdirSync(join(dir, 'lib'))
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
  return dir
}

test('a library that includes another is spliced in whole, the inner one in its place', () => {
  const dir = luaDir({
    'use-it.lua': '--[[\n  keys: 1\n]]\n--@include outer\nreturn outer()',
    'lib/outer.lua': '--@include inner\nlocal function outer() return inner() end',
    'lib/inner.lua': "local function inner() return 'inner' end",
  })
  const [s] = readScripts(dir)
  expect(s!.lua).toBe("--[[\n  keys: 1\n]]\nlocal function inner() return 'inner' end\nlocal function outer() return inner() end\nreturn outer()")
})

test('a library that includes itself, through another, is refused', () => {
  const dir = luaDir({
    'use-it.lua': '--[[\n  keys: 1\n]]\n--@include a\nreturn 1',
    'lib/a.lua': '--@include b',
    'lib/b.lua': '--@include a',
  })
  expect(() => readScripts(dir)).toThrow('lua/use-it.lua: lua/lib/a.lua includes itself (a → b → a)')
})

test("the debit takes only the raises' reading half; the scripts that write raises take both", () => {
  const scripts = readScripts()
  const debit = scripts.find((s) => s.name === 'debit')!.lua
  expect(debit).toContain('local function raised_row(')
  expect(debit).not.toContain('local function start_raise(')
  for (const name of ['setPolicy', 'decideProposal', 'createAgent']) {
    const lua = scripts.find((s) => s.name === name)!.lua
    expect(lua).toContain('local function raised_row(')
    expect(lua).toContain('local function start_raise(')
  }
})
