/**
 * The README's test command on a fresh machine: `npm test` runs scripts/test-setup.sh before the
 * runner, and what the set-up cannot provide it names in one line and stops, instead of letting
 * the browser tests throw. Run with a PATH that has no apt-get, so nothing is installed here.
 */
import { describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const root = join(import.meta.dir, '..', '..')

/** A PATH with only the shell tools the script uses: no apt-get, no redis-server, no pg_ctlcluster. */
function barePath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bare-path-'))
  for (const tool of ['bash', 'id', 'ls', 'sort', 'tail', 'seq', 'sleep']) symlinkSync(Bun.which(tool)!, join(dir, tool))
  return dir
}

function setup(env: Record<string, string>) {
  const p = Bun.spawnSync(['bash', 'scripts/test-setup.sh'], { cwd: root, env, stdout: 'pipe', stderr: 'pipe' })
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() }
}

describe('npm test set-up', () => {
  test('npm test runs the set-up, then the bun runner', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
    expect(pkg.scripts.test).toBe('bash scripts/test-setup.sh && bun test --timeout 30000')
  })

  test('a missing Chromium it cannot install stops it with one line saying what to install', () => {
    const r = setup({ PATH: barePath(), CHROMIUM_PATH: '/nonexistent/chromium' })
    expect(r.code).toBe(1)
    const lines = r.stderr.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('Chromium is missing at /nonexistent/chromium')
    expect(lines[0]).toContain('apt-get install chromium')
  })

  test('root with apt-get installs Debian’s chromium (dry run shows the commands)', () => {
    if (process.getuid?.() !== 0 || !Bun.which('apt-get')) return // that branch needs root and apt-get
    const r = setup({ PATH: process.env.PATH!, CHROMIUM_PATH: '/nonexistent/chromium', TEST_SETUP_DRY_RUN: '1' })
    expect(r.code).toBe(0)
    expect(r.stderr).toContain('would run: apt-get update')
    expect(r.stderr).toContain('would run: apt-get install -y -qq chromium')
  })

  test('on this machine (Redis, PostgreSQL, Chromium present) it passes quietly', () => {
    const r = setup({ PATH: process.env.PATH! })
    expect(r).toMatchObject({ code: 0, stderr: '' })
  })
})
