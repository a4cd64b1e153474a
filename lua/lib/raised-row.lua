-- Reading temporary raises (docs/api.md §13b; written by lib/raises.lua, which includes this): a
-- hash's `raises` field holds, per raised policy field, its raised value, its base and when it
-- lapses. Spliced in by `--@include raised-row` (debit.lua, which only reads them, and lib/raises.lua).

-- A row's policy fields as of `now`: each raised field reads its raised value before the lapse and
-- its base from the lapse on. `at` is where the row holds `raises`; the decoded table replaces the
-- JSON there, so a batch decodes each hash's once (lib/hash-memo.lua shares the row).
local function raised_row(r, at, now)
  local rs = r[at]
  if not rs then return end
  if type(rs) == 'string' then
    rs = cjson.decode(rs)
    r[at] = rs
  end
  for field, x in pairs(rs) do
    local v
    if now < x.lapses then v = x.value else v = x.base or false end
    -- Where the field sits in the debit's rows (the account's and every agent level's): compared,
    -- not looked up in a table, since a table built at the top cost every plain debit ~4,000
    -- instructions whether a row had raises or not (bench/RESULTS.md, issue 42).
    local pos = field == 'daily_cap' and 3 or field == 'allow' and 4 or field == 'budget' and 6 or nil
    -- A cap or budget as a number: in a batch the debit parses a shared row's numbers once, so a
    -- field written here after that must already be one.
    if v and pos ~= 4 then v = tonumber(v) end
    r[pos] = v
  end
end
