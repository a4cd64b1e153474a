--[[
  keys: 2
  rotate-owner.lua: replace the account's owner token, as a compare-and-set. The swap happens only
  while the account's owner is still the token the caller was admitted with (a bearer rotation) or
  the one it read (a recovery): a rotation admitted with a token that a recovery has replaced since
  is refused here, instead of overwriting the recovered token and keeping the stolen one alive.
  The outbox entry that tells Postgres of the new owner is appended by the same script.

  KEYS[1] account hash   {s}:acct:<acct>  (its `owner` field: the current owner token's SHA-256)
  KEYS[2] outbox stream  {s}:outbox

  ARGV[1] now, epoch ms
  ARGV[2] account id
  ARGV[3] SHA-256 of the owner token being replaced (what the caller holds or read)
  ARGV[4] SHA-256 of the new owner token
  ARGV[5] a recovery only: when its e-mailed link was issued, epoch ms (absent for a bearer rotation).
          A completed recovery voids every link issued before it (or in its millisecond): the account
          keeps `rec`, when its last recovery swapped, so of two links used at once only one rotates,
          and an older mail still in the inbox cannot take the account again.

  Returns {OK} | {UNAUTHORIZED} (the owner is no longer ARGV[3], or the account is gone: nothing written)
        | {LINK_INVALID} (ARGV[5] given, and a recovery completed since that link was issued: nothing written)
]]

--@include status
-- when, whose account, the owner hash the caller expects, the one it brings
local now, acct, expected, new_hash = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

local link_issued = ARGV[5]
if link_issued and tonumber(redis.call('HGET', KEYS[1], 'rec') or '-1') >= tonumber(link_issued) then return {S_LINK_INVALID} end
if redis.call('HGET', KEYS[1], 'owner') ~= expected then return {S_UNAUTHORIZED} end

redis.call('HSET', KEYS[1], 'owner', new_hash)
if link_issued then redis.call('HSET', KEYS[1], 'rec', now) end
redis.call('XADD', KEYS[2], '*', 'kind', 'owner', 'id', acct .. ':owner:' .. string.sub(new_hash, 1, 16),
  'acct', acct, 'owner', new_hash, 'at', now)
return {S_OK}
