-- An allowlist is a newline-separated list of patterns; an absent field means "everything".
-- A pattern is an exact slug, a glob with '*', or proxy:<provider>. Given a pattern as `name`, a
-- true answer also means the list covers every target that pattern matches: a '*' of the name can
-- only be consumed by a '*' of the list's pattern (no pattern holds a literal '*').
-- A metered proxy request is named proxy:<provider>/<model> (docs/api.md §7): proxy:<provider> admits
-- every model of the route, proxy:<provider>/<model-glob> only those.

local STAR = 42   -- string.byte('*')

-- The steps every glob walk of one script run (one call of a batch: the library is spliced into
-- the call's body) may take in all. Linear walks still multiply: a list of 100 globs of 80
-- characters, checked against 100 such patterns at each of 5 levels (create-agent.lua), is ~10^8
-- steps, ~10 s of Redis' one thread at ~10^7 steps a second. Past the budget a glob matches
-- nothing, so the target is refused, never let through: only an account's own lists can spend it,
-- and no list a person writes comes near (100 globs against a 40-character name: ~10^4 steps).
-- A script that checks lists against lists (create-agent.lua) may raise it before its checks.
local GLOB_STEPS = 100000
local glob_left = GLOB_STEPS

-- Whether `name` matches `glob`, whose one wildcard is '*' (any run of characters, '*' included).
-- A walk that only ever returns to the last '*' seen: at most #glob × #name steps. A Lua pattern
-- with '.*' per star backtracks through every split of the name among the stars instead, and
-- any owner may store 79 of them: one call held Redis' one thread for hours (2026-11-26 audit).
local function glob_match(glob, name)
  local g, n, glen, nlen = 1, 1, #glob, #name
  local star, mark = 0, 0   -- the last '*' seen in the glob, and where in the name its run ends
  while n <= nlen do
    glob_left = glob_left - 1
    if glob_left < 0 then return false end
    local c = g <= glen and string.byte(glob, g) or nil
    if c == STAR then
      star, mark, g = g, n, g + 1
    elseif c ~= nil and c == string.byte(name, n) then
      g, n = g + 1, n + 1
    elseif star > 0 then
      -- The last '*' takes one more character of the name; the glob resumes after it.
      mark = mark + 1
      g, n = star + 1, mark
    else
      return false
    end
  end
  while g <= glen and string.byte(glob, g) == STAR do g = g + 1 end
  return g > glen
end

local function allowed(list, name)
  if not list then return true end
  local route = string.match(name, '^(proxy:[^/]+)/')
  for pattern in string.gmatch(list, '[^\n]+') do
    if pattern == name or pattern == route then return true end
    if string.find(pattern, '*', 1, true) and glob_match(pattern, name) then return true end
  end
  return false
end
