/**
 * A private redis-server under valgrind's callgrind that counts every instruction it runs in a
 * window (`zero()` … `collect()`), and splits the count by script: callgrind dumps its counters on
 * entering and on leaving each EVALSHA/EVAL (`--dump-before`/`--dump-after`), so each script run is
 * one dump of its own, and what lies between (reading and parsing requests, writing replies, the
 * commands sent outside scripts, the event loop) the dumps between them. A dump's `summary:` line is
 * its count; the sum of a window's dumps is every instruction of the window. A script run is named
 * by the Redis commands it ran (`call` → `hsetCommand`, ...), matched against the tree's lua/.
 * Needs valgrind on the PATH. Dumps are read and removed as the window closes.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePorts, waitPing } from '../../test/helpers/redis-server'

export interface CommandCount {
  calls: number
  ir: number
}

export interface ScriptRuns {
  /** Script runs (EVALSHA/EVAL) of this kind. */
  runs: number
  ir: number
  /** The commands these runs ran (`redis.call`), calls and inclusive instructions. */
  commands: Record<string, CommandCount>
}

export interface CallgrindWindow {
  /** Every instruction redis-server ran in the window. */
  total: number
  /** Inside EVALSHA/EVAL, by script (named from the commands it ran). */
  scripts: Record<string, ScriptRuns>
  /** Outside scripts: the commands sent on their own (XREADGROUP, INFO, ...), inclusive. */
  commands: Record<string, CommandCount>
  /** Outside scripts and commands: reading and parsing requests, writing replies, the event loop, cron. */
  rest: number
  dumps: number
}

/** Commands a dump shows run through `call()` (top level or from a script), inclusive; eval itself left out. */
export function parseDump(text: string): { summary: number; trigger: string; commands: Record<string, CommandCount> } {
  const summary = Number(/^summary: (\d+)/m.exec(text)?.[1] ?? NaN)
  const trigger = /^desc: Trigger: (.*)$/m.exec(text)?.[1] ?? ''
  const commands: Record<string, CommandCount> = {}
  let fn = ''
  let cfn = ''
  let calls = -1
  for (const line of text.split('\n')) {
    if (calls >= 0) {
      // The line after `calls=` holds the calls' inclusive cost: position, then Ir.
      const parts = line.trim().split(/\s+/)
      const ir = parts.length > 1 ? Number(parts.at(-1)) : 0
      const c = (commands[cfn] ??= { calls: 0, ir: 0 })
      c.calls += calls
      c.ir += ir
      calls = -1
    } else if (line.startsWith('fn=')) fn = line.slice(3).replace(/'\d+$/, '')
    else if (line.startsWith('cfn=')) cfn = line.slice(4).replace(/'\d+$/, '')
    else if (line.startsWith('calls=') && fn === 'call' && /^[a-z][A-Za-z]*Command$/.test(cfn) && !/^eval(Sha)?(Ro)?Command$/.test(cfn))
      calls = Number(line.slice(6).split(' ')[0])
  }
  return { summary, trigger, commands }
}

/** `hsetCommand` → `hset` (a container's subcommand, `xinfoCommand` → `xinfo`). */
const commandOf = (fn: string) => fn.replace(/Command$/, '').toLowerCase()

/**
 * Names a script run by the commands it ran: the scripts of `catalog` (name → the commands its
 * source calls) whose commands include all of them; several: joined with `|`, none: `?`.
 */
export function nameRun(ran: string[], catalog: Record<string, Set<string>>, prefer: string[] = []): string {
  const fits = Object.entries(catalog)
    .filter(([, cmds]) => ran.every((c) => cmds.has(c)))
    .map(([n]) => n)
  const preferred = prefer.filter((p) => fits.includes(p))
  if (preferred.length === 1) return preferred[0]!
  if (fits.length === 0) return `? (${ran.join(' ')})`
  return fits.length === 1 ? fits[0]! : fits.sort().join('|')
}

/** name → the Redis commands its source calls (`redis.call('HSET', ...)` → `hset`), with those of the lua/lib files it includes (`--@include <lib>`). */
export function luaCommands(root: string): Record<string, Set<string>> {
  const dir = join(root, 'lua')
  const scan = (file: string, into: Set<string>, seen: Set<string>) => {
    if (seen.has(file)) return
    seen.add(file)
    // A generated include (`status`: the status table) has no file and calls nothing.
    if (!existsSync(file)) return
    const src = readFileSync(file, 'utf8')
    for (const m of src.matchAll(/redis\.p?call\(\s*'([A-Za-z_]+)'/g)) into.add(m[1]!.toLowerCase())
    for (const m of src.matchAll(/^--@include ([a-z0-9-]+)$/gm)) scan(join(dir, 'lib', `${m[1]}.lua`), into, seen)
  }
  const out: Record<string, Set<string>> = {}
  for (const f of readdirSync(dir))
    if (f.endsWith('.lua')) {
      const cmds = new Set<string>()
      scan(join(dir, f), cmds, new Set())
      out[f] = cmds
    }
  return out
}

export interface CallgrindRedis {
  url: string
  pid: number
  /** Opens the window: counters zeroed, earlier dumps removed. */
  zero(): void
  /** Closes the window: the last dump taken, every dump of the window read and removed. */
  collect(catalog: Record<string, Set<string>>, prefer?: string[]): CallgrindWindow
  stop(): Promise<void>
}

/**
 * The options every redis-server a bench runs under valgrind takes: nothing kept on disk, and no slow
 * log (valgrind runs a script ~50–100× slower, past the log's 10 ms threshold, and Redis then copies
 * its arguments into the log: ~4,500 instructions a depth-4 batch that no native run pays).
 */
export const UNDER_VALGRIND = ['--save', '', '--appendonly', 'no', '--slowlog-log-slower-than', '-1']

export async function startCallgrindRedis(): Promise<CallgrindRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'pab-cg-redis-'))
  const [port] = await freePorts(1)
  const dumpsAt = ['evalShaCommand', 'evalCommand'].flatMap((f) => [`--dump-before=${f}`, `--dump-after=${f}`])
  const proc = Bun.spawn(
    ['valgrind', '--tool=callgrind', '--compress-strings=no', '--compress-pos=no', '--dump-instr=no', ...dumpsAt, `--callgrind-out-file=${dir}/cg.%p`,
      'redis-server', '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, ...UNDER_VALGRIND],
    { stdout: 'ignore', stderr: 'ignore' },
  )
  const kill = () => {
    proc.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
  process.on('exit', kill)
  // valgrind takes a few seconds to start it.
  await waitPing(port!, 60_000)
  const control = (flag: string) => {
    const r = Bun.spawnSync(['callgrind_control', flag, String(proc.pid)])
    if (r.exitCode !== 0) throw new Error(`callgrind_control ${flag}: ${r.stderr.toString()}`)
  }
  const dumps = () => readdirSync(dir).filter((f) => /^cg\.\d+\.\d+$/.test(f))
  const removeDumps = () => {
    for (const f of dumps()) rmSync(join(dir, f), { force: true })
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: proc.pid,
    zero() {
      control('-z')
      removeDumps()
    },
    collect(catalog, prefer = []) {
      control('-d')
      const w: CallgrindWindow = { total: 0, scripts: {}, commands: {}, rest: 0, dumps: 0 }
      const files = dumps().sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()))
      for (const f of files) {
        const d = parseDump(readFileSync(join(dir, f), 'utf8'))
        // REDIS_CPU_KEEP_DUMPS=<dir>: the window's dumps kept there, for callgrind_annotate.
        if (process.env.REDIS_CPU_KEEP_DUMPS) Bun.spawnSync(['cp', join(dir, f), process.env.REDIS_CPU_KEEP_DUMPS])
        rmSync(join(dir, f), { force: true })
        if (!Number.isFinite(d.summary)) throw new Error(`callgrind dump ${f} has no summary`)
        w.total += d.summary
        w.dumps++
        // A dump taken on leaving eval holds exactly that script run.
        if (/--dump-after=eval/.test(d.trigger)) {
          const ran = Object.keys(d.commands).map(commandOf).sort()
          const s = (w.scripts[nameRun(ran, catalog, prefer)] ??= { runs: 0, ir: 0, commands: {} })
          s.runs++
          s.ir += d.summary
          for (const [fn, c] of Object.entries(d.commands)) {
            const t = (s.commands[commandOf(fn)] ??= { calls: 0, ir: 0 })
            t.calls += c.calls
            t.ir += c.ir
          }
        } else {
          let cmds = 0
          for (const [fn, c] of Object.entries(d.commands)) {
            const t = (w.commands[commandOf(fn)] ??= { calls: 0, ir: 0 })
            t.calls += c.calls
            t.ir += c.ir
            cmds += c.ir
          }
          w.rest += d.summary - cmds
        }
      }
      return w
    },
    async stop() {
      proc.kill('SIGKILL')
      await proc.exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
