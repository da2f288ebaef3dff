-- acquire for a policy of a single limit: evaluate.lua without the bookkeeping of several limits
-- (the deciding limit, writes held back until every limit has allowed), which costs a single-limit
-- decision about 5 % of Redis's time. Same KEYS, ARGV and reply as evaluate.lua's acquire.
local inspecting, cost, kind, p1, p2, p3, p4 = struct.unpack('<ddddddd', ARGV[1])
local key = KEYS[1]
local allowed, limit, remaining, retry, reset, delay = 0, 0, 0, NONE, 0, NONE
local value, ttl, commit  -- as in evaluate.lua

-- @algorithms: one block per kind (token_bucket.lua ... concurrency.lua), spliced in here.

if allowed == 1 and cost > 0 then
  local ms = (ttl + (-ttl) % 1000) / 1000  -- whole ms, rounded up, at least 1
  if ms < 1 then ms = 1 end
  ms = string.format('%d', ms)
  if commit then
    commit()
    redis.call('PEXPIRE', key, ms)
  else
    redis.call('SET', key, value, 'PX', ms)
  end
end
return struct.pack('<ddddddd', allowed, limit, remaining, retry, reset, delay, 0)
