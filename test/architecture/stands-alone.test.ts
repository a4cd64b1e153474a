/**
 * The repository stands alone: no file in src/, lua/, test/ or docs/ (nor the README) cites a
 * document a clone does not have — the team's contract or style notes, or a path outside the
 * repository. Code cites docs/ instead (docs/api.md §N for the interface).
 */
import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'

const ROOT = join(import.meta.dir, '..', '..')
// Spelt in pieces, so that this file does not cite what it looks for.
const OUTSIDE = [['CONTR', 'ACT'].join(''), ['STY', 'LE.md'].join(''), ['..', '/shared'].join(''), ['/work', '/'].join('')]

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? filesUnder(path) : /\.(ts|lua|md|json|sh)$/.test(name) ? [path] : []
  })
}

describe('the repository stands alone', () => {
  test('nothing in src/, lua/, test/, docs/ or the README names a file outside it', () => {
    const cites: string[] = []
    for (const file of [...['src', 'lua', 'test', 'docs'].flatMap((d) => filesUnder(join(ROOT, d))), join(ROOT, 'README.md')]) {
      const lines = readFileSync(file, 'utf8').split('\n')
      lines.forEach((line, i) => {
        for (const word of OUTSIDE) if (line.includes(word)) cites.push(`${relative(ROOT, file)}:${i + 1}: ${word}`)
      })
    }
    expect(cites).toEqual([])
  })

  test('the check finds a citation when there is one', () => {
    const line = `see ${OUTSIDE[0]} §7`
    expect(OUTSIDE.some((w) => line.includes(w))).toBe(true)
  })
})
