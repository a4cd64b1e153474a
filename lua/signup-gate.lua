--[[
  keys: 2
  signup-gate.lua: the trial-abuse alarm. Admits one signup unless signups are paused, counting it
  in a sliding one-hour window; the signup that would take the last hour's count past the alarm is
  refused and pauses signups until the founder resumes them (POST /admin/signups/resume).
  Count, check and pause are one step, so concurrent signups on any instance cannot slip past.

  KEYS[1] pause flag                {signups}:paused
  KEYS[2] admitted signups (zset)   {signups}:recent   member = account id, score = now

  ARGV[1] now, epoch ms
  ARGV[2] alarm: signups per hour
  ARGV[3] the new account id (removed again by the caller if the signup fails later)

  Returns {OK, count_in_window} | {SIGNUPS_PAUSED, 0} (paused before, or paused by this signup)
]]

--@include status
local HOUR_MS = 3600000

local now, limit, member = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]

if redis.call('EXISTS', KEYS[1]) == 1 then return {S_SIGNUPS_PAUSED, 0} end
local count = redis.call('ZCOUNT', KEYS[2], '(' .. (now - HOUR_MS), '+inf')

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - HOUR_MS)
if count + 1 > limit then
  redis.call('SET', KEYS[1], now)
  return {S_SIGNUPS_PAUSED, 0}
end
redis.call('ZADD', KEYS[2], now, member)
redis.call('PEXPIRE', KEYS[2], HOUR_MS)
return {S_OK, count + 1}
