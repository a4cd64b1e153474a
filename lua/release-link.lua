--[[
  keys: 1
  release-link.lua: gives a claimed vault link back when storing its key failed (Postgres down),
  so the human can submit again instead of asking the agent for a new link. Only the claim that
  took the link can release it.

  KEYS[1] the link record (see claim-link.lua)

  ARGV[1] claim id given to claim-link.lua

  Returns {OK, released} with released 1 when this claim was undone, else 0
]]

--@include status

if redis.call('HGET', KEYS[1], 'used') ~= ARGV[1] then return {S_OK, 0} end
redis.call('HDEL', KEYS[1], 'used', 'used_at')
return {S_OK, 1}
