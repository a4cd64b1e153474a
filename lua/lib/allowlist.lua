-- An allowlist is a newline-separated list of patterns; an absent field means "everything".
-- A pattern is an exact slug, a glob with '*', or proxy:<provider>. Given a pattern as `name`, a
-- true answer also means the list covers every target that pattern matches: a '*' of the name can
-- only be consumed by a '*' of the list's pattern (no pattern holds a literal '*').
-- A metered proxy request is named proxy:<provider>/<model> (CONTRACT §7): proxy:<provider> admits
-- every model of the route, proxy:<provider>/<model-glob> only those.
local function allowed(list, name)
  if not list then return true end
  local route = string.match(name, '^(proxy:[^/]+)/')
  for pattern in string.gmatch(list, '[^\n]+') do
    if pattern == name or pattern == route then return true end
    if string.find(pattern, '*', 1, true) then
      local lua_pat = '^' .. string.gsub(pattern, '[%^%$%(%)%%%.%[%]%+%-%?]', '%%%0'):gsub('%*', '.*') .. '$'
      if string.match(name, lua_pat) then return true end
    end
  end
  return false
end
