
-- Sliding log: one sorted-set member per admitted unit, so the live cost is a ZCOUNT.
local log = {}
function log.load(p, key)
  local s = {newest = nil, stale = false}
  local last = redis.pcall('ZRANGE', key, -1, -1, 'WITHSCORES')
  if type(last) ~= 'table' or last.err then
    s.stale = redis.call('EXISTS', key) == 1
    return s
  end
  if last[2] ~= nil then s.newest = tonumber(last[2]) end
  if s.newest ~= nil and s.newest + p.b2 <= now then s.newest = nil end  -- expired: empty
  return s
end
local function log_view(p, s, key)
  if s.newest == nil then return now, 0 end
  local at = math.max(now, s.newest)
  return at, redis.call('ZCOUNT', key, '(' .. int(at - p.b2), '+inf')
end
function log.decide(p, s, cost, key)
  local limit, window = p.b1, p.b2
  local at, used = log_view(p, s, key)
  local v = verdict(limit)
  if used + cost <= limit then
    v.allowed = 1
    v.remaining = limit - used - cost
    if cost > 0 then
      v.reset = at + window - now
    elseif used > 0 then
      v.reset = s.newest + window - now
    end
    return v
  end
  v.remaining = limit - used
  if used > 0 then v.reset = math.max(0, s.newest + window - now) end
  if cost > limit then return v end
  -- The excess-th oldest live unit is the last that must leave the window.
  local excess = used + cost - limit
  local entry = redis.call('ZRANGEBYSCORE', key, '(' .. int(at - window), '+inf', 'WITHSCORES',
                           'LIMIT', excess - 1, 1)
  v.retry = tonumber(entry[2]) + window - now
  return v
end
function log.commit(p, s, cost, key)
  if s.stale then redis.call('DEL', key) end
  local at = now
  if s.newest ~= nil then at = math.max(now, s.newest) end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', int(at - p.b2))
  local same_instant = redis.call('ZCOUNT', key, int(at), int(at))
  local args = {}
  for i = 1, cost do  -- in batches: unpack() is bounded by Lua's C stack
    args[#args + 1] = int(at)
    args[#args + 1] = int(at) .. ':' .. int(same_instant + i)
    if #args == 2000 or i == cost then
      redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
  expire(key, at + p.b2)
end
algorithms[7] = log
