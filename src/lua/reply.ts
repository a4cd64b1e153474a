/**
 * What every wrapper of src/lua/ shares: a script answers a flat tuple whose first element is a
 * ScriptStatus. The wrappers are the only readers of those tuples (test/architecture/scripts-owner),
 * so the position of a value is known in exactly one file per script: the one beside its Lua header.
 */
import { ScriptStatus } from '../redis/codes'

export type Reply = (string | number | null)[]

export const statusOf = (reply: Reply): ScriptStatus => Number(reply[0]) as ScriptStatus

/** A numeric element; a missing one reads 0, as the scripts' `or '0'` defaults do. */
export const num = (reply: Reply, i: number): number => Number(reply[i] ?? 0)

/** A string element; the scripts answer '' for "none", which reads as ''. */
export const str = (reply: Reply, i: number): string => (reply[i] === null || reply[i] === undefined ? '' : String(reply[i]))

/** A status a wrapper's contract does not list: the Lua and its wrapper disagree. */
export function unexpected(script: string, reply: Reply): Error {
  return new Error(`${script}: unexpected status ${String(reply[0])} (${ScriptStatus[statusOf(reply)] ?? 'unknown'})`)
}
