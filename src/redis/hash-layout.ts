/**
 * The field that keeps an account's and an agent's hash a hashtable (docs/redis-keys.md, "The layout
 * of the account and agent hashes"). Redis stores a small hash as a listpack, where finding a field
 * is a scan of the whole hash; a paid call reads 9 fields of its account's hash and 11–16 of its
 * agent's and each ancestor's, most of them absent on an account or agent without limits of its own
 * (each absent field a full scan). A value longer than `hash-max-listpack-value` (64 bytes by
 * default) makes Redis keep the hash a hashtable from its first write: less Redis work a paid call
 * for ~500 bytes more a hash (bench/RESULTS.md, issue 42). Nothing reads it.
 */
export const LAYOUT_FIELD = 'layout'
export const LAYOUT_VALUE = 'hashtable: a value over 64 bytes keeps Redis from packing this hash (docs/redis-keys.md)'

/** `--@include hash-layout` in a script (src/redis/scripts.ts): the same two strings as Lua locals. */
export function hashLayoutInclude(): string {
  return `local LAYOUT_FIELD, LAYOUT_VALUE = '${LAYOUT_FIELD}', '${LAYOUT_VALUE}'`
}
