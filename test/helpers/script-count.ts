import type { ScriptFn, ScriptName } from '../../src/redis/scripts'
import type { TestApp } from './harness'

/**
 * Counts the scripts of `name` the app sends and the calls they carry (`callsIn` reads that from a
 * batch's keys and args), until `restore()`.
 */
export function countScript(t: TestApp, name: ScriptName, callsIn: (keys: string[], argv: Parameters<ScriptFn>[1]) => number): { scripts: number; calls: number; restore: () => void } {
  const original = t.s.ctx.scripts[name]
  const seen = { scripts: 0, calls: 0, restore: () => void (t.s.ctx.scripts[name] = original) }
  t.s.ctx.scripts[name] = async (keys, argv) => {
    seen.scripts++
    seen.calls += callsIn(keys, argv)
    return original(keys, argv)
  }
  return seen
}
