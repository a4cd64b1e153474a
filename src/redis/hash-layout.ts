/**
 * The field that keeps an agent's hash a hashtable (docs/redis-keys.md, "The agent hash's layout").
 * Redis stores a small hash as a listpack, where finding a field is a scan of the whole hash; a
 * paid call reads 11–16 fields of its agent's hash and of each ancestor's, most of them absent on an
 * agent without limits of its own (each absent field a full scan). A value longer than
 * `hash-max-listpack-value` (64 bytes by default) makes Redis keep the hash a hashtable from its first
 * write: a depth-4 debit costs Redis ~4,000 instructions less a batched call, ~60,000 less alone, for
 * ~500 bytes more an agent (bench/RESULTS.md, issue 42). Nothing reads it.
 */
export const LAYOUT_FIELD = 'layout'
export const LAYOUT_VALUE = 'hashtable: a value over 64 bytes keeps Redis from packing this hash (docs/redis-keys.md)'

/** `--@include hash-layout` in a script (src/redis/scripts.ts): the same two strings as Lua locals. */
export function hashLayoutInclude(): string {
  return `local LAYOUT_FIELD, LAYOUT_VALUE = '${LAYOUT_FIELD}', '${LAYOUT_VALUE}'`
}
