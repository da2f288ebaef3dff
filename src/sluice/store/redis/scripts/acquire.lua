-- acquire: decide `cost` for one subject over all limits of its policy, atomically.
-- KEYS[i]: state key of limit i. ARGV: cost, lease id ('' when no concurrency limit), then five
-- values per limit (see common.lua). Replies {allowed, limit, remaining, retry_after,
-- reset_after, delay, limit_index} for the deciding limit (limit_index from 0). Writes only when
-- every limit allows and cost > 0; every key written gets a TTL.
local cost = tonumber(ARGV[1])
local lease = ARGV[2]
local params, states, verdicts = {}, {}, {}
local chosen, longest_delay = nil, NONE

-- Whether verdict a decides over b (evaluate.cc is_tighter).
local function tighter(a, b)
  if a.allowed ~= b.allowed then return a.allowed == 0 end
  if a.allowed == 1 then return a.remaining < b.remaining end
  if b.retry == NONE then return false end
  if a.retry == NONE then return true end
  return a.retry > b.retry
end

for i = 1, #KEYS do
  local p = read_limit(3 + (i - 1) * 5)
  local algorithm = algorithms[p.kind]
  local s = algorithm.load(p, KEYS[i])
  local v = algorithm.decide(p, s, cost, KEYS[i])
  params[i], states[i], verdicts[i] = p, s, v
  if v.delay ~= NONE and v.delay > longest_delay then longest_delay = v.delay end
  if chosen == nil or tighter(v, verdicts[chosen]) then chosen = i end
end

local decided = verdicts[chosen]
if decided.allowed == 1 then
  decided.delay = longest_delay
  if cost > 0 then
    for i = 1, #KEYS do
      algorithms[params[i].kind].commit(params[i], states[i], cost, KEYS[i], lease)
    end
  end
end
return verdict_reply(decided, chosen - 1)
