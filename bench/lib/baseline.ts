/**
 * `--baseline <dir>`: a checkout of an earlier commit (with node_modules) whose service runs beside
 * ours in the same run, so every table shows current and baseline side by side, measured under the
 * same machine load (one run's numbers against another run's would mostly compare the load).
 */
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'

export interface Baseline {
  root: string
  /** Short commit of the checkout: the row is named "… (baseline <commit>)". */
  commit: string
}

export function resolveBaseline(dir: string | undefined): Baseline | null {
  if (!dir) return null
  const root = resolve(dir)
  for (const need of ['src/index.ts', 'lua', 'node_modules/.bin/bun'])
    if (!existsSync(join(root, need))) throw new Error(`--baseline ${dir}: ${need} is missing (a checkout of an earlier commit with node_modules is needed)`)
  const git = Bun.spawnSync(['git', '-C', root, 'rev-parse', '--short=7', 'HEAD'])
  const commit = git.exitCode === 0 ? git.stdout.toString().trim() : 'unknown'
  const dirty = Bun.spawnSync(['git', '-C', root, 'status', '--porcelain', '--untracked-files=no']).stdout.toString().trim()
  return { root, commit: dirty ? `${commit}+dirty` : commit }
}

export const baselineName = (row: string, b: Baseline) => `${row} (baseline ${b.commit})`

/**
 * A bench's command line as RESULTS.md records it: the baseline's directory (a path on the machine
 * that ran it, outside the repository) named by its commit instead.
 */
export function recordedCommand(prefix: string, args: readonly string[], b: Baseline | null): string {
  const out = [prefix]
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    if (a === '--baseline' && b) out.push(a, `<checkout of ${b.commit}>`), i++
    else if (a.startsWith('--baseline=') && b) out.push(`--baseline=<checkout of ${b.commit}>`)
    else out.push(a)
  }
  return out.join(' ')
}
