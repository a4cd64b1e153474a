/**
 * Loads every script of lua/ once and calls it by SHA (EVALSHA), falling back to EVAL after a
 * NOSCRIPT (e.g. after SCRIPT FLUSH or a restart): src/redis/variable-keys.ts.
 * The number of KEYS is declared in the script's header (`keys: <N>`), not in its file name, so a
 * key added to a script renames nothing; `keys: n` takes a batch, whose number of KEYS is sent with
 * each call. test/lua/scripts.test.ts holds the header's count to the KEYS the header documents.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { batchedCaller } from './batched-scripts'
import type { RedisClient } from './client'
import { variableKeysCaller } from './variable-keys'
import { ScriptStatus } from './codes'
import { hashLayoutInclude } from './hash-layout'
import { TurnBatch } from './turn-batch'

export const LUA_DIR = join(import.meta.dir, '..', '..', 'lua')

export const SCRIPT_NAMES = ['debit', 'refund', 'recordCalls', 'createAccount', 'referralBonus', 'rateLimit', 'authorize', 'claimLink', 'releaseLink', 'createAgent', 'agentState', 'recountAgents', 'releaseExpired', 'setPolicy', 'signupGate', 'setMandate', 'reserveRefill', 'creditTopup', 'releaseRefill', 'decideParked', 'reverseCharge', 'restoreAccount', 'deadLetter', 'replayDeadLetter', 'propose', 'decideProposal', 'consoleSession', 'settle', 'ackOutbox', 'rotateOwner', 'oauthRedeem', 'oauthRefresh'] as const
export type ScriptName = (typeof SCRIPT_NAMES)[number]

export interface LuaScript {
  file: string
  name: ScriptName
  /** null: a batch script (`keys: n`), any number of KEYS. */
  numberOfKeys: number | null
  lua: string
}

const camel = (s: string) => s.replace(/-(\w)/g, (_, c: string) => c.toUpperCase())

export function readScripts(dir = LUA_DIR): LuaScript[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.lua'))
    .map((file) => {
      const m = /^([a-z][a-z-]*)\.lua$/.exec(file)
      if (!m) throw new Error(`lua/${file}: expected <verb>.lua`)
      const lua = readFileSync(join(dir, file), 'utf8')
      const keys = /^--\[\[\r?\n {2}keys: (\d+|n)\b/.exec(lua)
      if (!keys) throw new Error(`lua/${file}: its header's second line must declare \`keys: <N>\` (or \`keys: n\` for a batch)`)
      const numberOfKeys = keys[1] === 'n' ? null : Number(keys[1])
      const body = withIncludes(lua, dir, file)
      return { file, name: camel(m[1]!) as ScriptName, numberOfKeys, lua: body.replace(STATUS_MARK, () => statusInclude(statusesUsed(body))) }
    })
}

/**
 * The script statuses as Lua locals (`local S_OK, S_REPLAY, … = 0, 1, …`), generated from the one
 * `ScriptStatus` table: a script says `--@include status` and never copies a number by hand. A
 * script gets the ones it names (`used`): each local is an instruction and a register every run of
 * it makes (all ~90 of them cost a plain debit ~1,100 instructions, bench/RESULTS.md).
 */
export function statusInclude(used?: ReadonlySet<string>): string {
  const entries = (Object.entries(ScriptStatus).filter(([, v]) => typeof v === 'number') as [string, number][]).filter(([k]) => !used || used.has(`S_${k}`))
  if (entries.length === 0) return ''
  return `local ${entries.map(([k]) => `S_${k}`).join(', ')} = ${entries.map(([, v]) => v).join(', ')}`
}

/** Where `--@include status` stood, filled once the whole script (its libraries too) is known. */
const STATUS_MARK = /^--@status$/m
const statusesUsed = (lua: string) => new Set(lua.replace(STATUS_MARK, '').match(/\bS_[A-Z0-9_]+\b/g) ?? [])

/**
 * Splices `lua/lib/<name>.lua` where a script says `--@include <name>`: logic several scripts share
 * (the rate window) is written once, and each script still loads as one self-contained body.
 * `status` and `hash-layout` are generated (statusInclude, hashLayoutInclude) rather than read from a file.
 */
function withIncludes(lua: string, dir: string, file: string, within: readonly string[] = []): string {
  return lua.replace(/^--@include ([a-z0-9-]+)$/gm, (_, name: string) => {
    if (name === 'status') return '--@status'
    if (name === 'hash-layout') return hashLayoutInclude()
    if (within.includes(name)) throw new Error(`lua/${file}: lua/lib/${name}.lua includes itself (${[...within, name].join(' → ')})`)
    let lib: string
    try {
      lib = readFileSync(join(dir, 'lib', `${name}.lua`), 'utf8').trimEnd()
    } catch {
      throw new Error(`lua/${file}: no lua/lib/${name}.lua to include`)
    }
    // A library may include another (lib/raises.lua the reading half, lib/raised-row.lua).
    return withIncludes(lib, dir, file, [...within, name])
  })
}

type Reply = (string | number | null)[]
export type ScriptFn = (keys: string[], argv: (string | number)[]) => Promise<Reply>

export type Scripts = Record<ScriptName, ScriptFn>

/**
 * The hot scripts, each declared here once: a paid request runs them on its way, so the calls one
 * turn of the event loop makes per hash slot go to Redis as one script (turn-batch.ts), each still
 * applied on its own. The number is a batch's most calls, so that one script never holds Redis'
 * single thread for long (about 1 ms at most).
 */
export const BATCH_SIZE = {
  /** ~30 redis.calls a call; its fixed keys are batched by a generated wrapper (batched-scripts.ts). */
  debit: 32,
  /** settle.lua: ~15 redis.calls a call; it takes a batch itself (src/lua/settle.ts builds it). */
  settle: 32,
  /** record-calls.lua: ~10 redis.calls a call (src/paid-request/call-filing.ts builds it). */
  recordCalls: 32,
} as const satisfies Partial<Record<ScriptName, number>>
export type BatchedScript = keyof typeof BATCH_SIZE

/** The fixed-key scripts among them (`keys: <N>` in their header): sent through the wrapper, not batched by their callers. */
export const BATCHED: ReadonlySet<ScriptName> = new Set(readScripts().filter((s) => s.name in BATCH_SIZE && s.numberOfKeys !== null).map((s) => s.name))

/** The batcher of a `-n` script's calls, at its declared size. */
export function scriptBatch<I, R>(name: BatchedScript, send: (group: string, items: I[]) => Promise<(R | Error)[]>): TurnBatch<I, R> {
  return new TurnBatch(send, BATCH_SIZE[name])
}

/**
 * Typed callers of every script on the client.
 * `wrappedFrom`: see batched-scripts.ts WRAPPED_FROM (0: every batch through the wrapper whole, for tests of the wrapper itself).
 */
export function loadScripts(redis: RedisClient, o: { wrappedFrom?: number } = {}): Scripts {
  const out = {} as Scripts
  for (const s of readScripts()) {
    const n = s.numberOfKeys
    if (n === null) {
      out[s.name] = variableKeysCaller(redis, s.lua)
      continue
    }
    // EVALSHA by hand, not ioredis' defineCommand: every auto-pipeline ioredis makes (one per turn
    // of the event loop) copies each defined command onto itself, ~9% of the service's CPU under load
    // with the 32 scripts defined (bench/RESULTS.md, issue 42).
    const sent = variableKeysCaller(redis, s.lua)
    out[s.name] = (keys, argv) => {
      if (keys.length !== n) throw new Error(`${s.file}: ${keys.length} keys given`)
      return sent(keys, argv)
    }
    if (BATCHED.has(s.name)) {
      const one = out[s.name]
      // A call sent alone leaves out the trailing KEYS that only repeat KEYS[2] (the debit's unused
      // slots, lua/debit.lua): each key costs Redis ~1,000 instructions to parse and hand to Lua.
      const plain = sent
      const alone = (keys: string[], argv: (string | number)[]) => {
        let end = keys.length
        while (end > 2 && keys[end - 1] === keys[1]) end--
        return plain(end === keys.length ? keys : keys.slice(0, end), argv)
      }
      const batched = batchedCaller(redis, s.name, s.lua, n, alone, BATCH_SIZE[s.name as BatchedScript], o.wrappedFrom)
      out[s.name] = (keys, argv) => {
        if (keys.length !== n) return one(keys, argv)
        return batched(keys, argv)
      }
    }
  }
  for (const n of SCRIPT_NAMES) if (!out[n]) throw new Error(`lua/: no script for ${n}`)
  return out
}
