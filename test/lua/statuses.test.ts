/**
 * Script statuses have one owner: `ScriptStatus` (src/redis/codes.ts). Every Lua file takes them from
 * the generated `--@include status` and never defines a status number of its own; every `S_*` name a
 * script uses is a member of the table. The checker is also fed scripts that break each rule.
 */
import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ScriptStatus } from '../../src/redis/codes'
import { LUA_DIR, readScripts, statusInclude } from '../../src/redis/scripts'

/** Problems of one Lua source (as written on disk, before includes are spliced). */
function statusProblems(file: string, lua: string): string[] {
  const out: string[] = []
  if (/^\s*local\s+S_[A-Z_]+/m.test(lua)) out.push(`${file}: defines its own S_* status; use --@include status`)
  for (const [, name] of lua.matchAll(/\bS_([A-Z_]+)\b/g))
    if (!(name! in ScriptStatus)) out.push(`${file}: S_${name} is not a ScriptStatus`)
  if (/\bS_[A-Z_]+\b/.test(lua) && !/^--@include status$/m.test(lua) && !file.startsWith('lib/'))
    out.push(`${file}: uses statuses without --@include status`)
  return out
}

const luaFiles = () => [
  ...readdirSync(LUA_DIR).filter((f) => f.endsWith('.lua')),
  ...readdirSync(join(LUA_DIR, 'lib')).filter((f) => f.endsWith('.lua')).map((f) => `lib/${f}`),
]

describe('script statuses', () => {
  test('every Lua file takes its statuses from ScriptStatus', () => {
    const problems = luaFiles().flatMap((f) => statusProblems(f, readFileSync(join(LUA_DIR, f), 'utf8')))
    expect(problems).toEqual([])
  })

  test('the generated include defines every status with its number', () => {
    const inc = statusInclude()
    const [, names, values] = /^local (.+) = (.+)$/.exec(inc)!
    const pairs = names!.split(', ').map((n, i) => [n, Number(values!.split(', ')[i])])
    expect(Object.fromEntries(pairs)).toEqual(
      Object.fromEntries(Object.entries(ScriptStatus).filter(([, v]) => typeof v === 'number').map(([k, v]) => [`S_${k}`, v])),
    )
  })

  test("each loaded script defines the statuses it names, its libraries' too, and no other", () => {
    for (const s of readScripts()) {
      const line = /^local (S_[A-Z0-9_, ]+) = ([0-9, ]+)$/m.exec(s.lua)
      const defined = line ? line[1]!.split(', ') : []
      const rest = line ? s.lua.replace(line[0], '') : s.lua
      expect([s.file, [...defined].sort()]).toEqual([s.file, [...new Set(rest.match(/\bS_[A-Z0-9_]+\b/g) ?? [])].sort()])
      const values = line ? line[2]!.split(', ').map(Number) : []
      expect(defined.map((n, i) => [n, values[i]])).toEqual(defined.map((n) => [n, ScriptStatus[n.slice(2) as keyof typeof ScriptStatus]]))
    }
  })

  test('a hand-copied status, an unknown one, or a missing include is caught', () => {
    expect(statusProblems('x-1.lua', '--@include status\nlocal S_OK = 0\nreturn {S_OK}')).toEqual([
      'x-1.lua: defines its own S_* status; use --@include status',
    ])
    expect(statusProblems('x-1.lua', '--@include status\nreturn {S_NOPE}')).toEqual(['x-1.lua: S_NOPE is not a ScriptStatus'])
    expect(statusProblems('x-1.lua', 'return {S_OK}')).toEqual(['x-1.lua: uses statuses without --@include status'])
  })
})
