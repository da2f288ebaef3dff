
-- Concurrency: hash lease id -> "<expires_at>:<cost>".
local leases = {}
function leases.load(p, key)
  local s = {live = {}, held = 0, latest = now, stale = false}
  local all = redis.pcall('HGETALL', key)
  if type(all) ~= 'table' or all.err then
    s.stale = redis.call('EXISTS', key) == 1
    return s
  end
  for i = 1, #all, 2 do
    local n = numbers(all[i + 1])
    if n[1] > now then
      s.live[#s.live + 1] = {id = all[i], expires_at = n[1], cost = n[2]}
      s.held = s.held + n[2]
      if n[1] > s.latest then s.latest = n[1] end
    end
  end
  s.total = #all / 2
  return s
end
function leases.decide(p, s, cost)
  local limit, ttl = p.b1, p.b2
  local v = verdict(limit)
  if s.held + cost <= limit then
    v.allowed = 1
    v.remaining = limit - s.held - cost
    if cost > 0 then
      v.reset = math.max(s.latest, now + ttl) - now
    else
      v.reset = s.latest - now
    end
    return v
  end
  v.remaining = limit - s.held
  v.reset = s.latest - now
  if cost > limit then return v end
  table.sort(s.live, function(a, b) return a.expires_at < b.expires_at end)
  local excess = s.held + cost - limit
  for _, lease in ipairs(s.live) do
    excess = excess - lease.cost
    if excess <= 0 then
      v.retry = lease.expires_at - now
      break
    end
  end
  return v
end
function leases.commit(p, s, cost, key, lease)
  if s.stale then redis.call('DEL', key) end
  if s.total ~= nil and s.total > #s.live then  -- drop expired leases
    local all = redis.call('HGETALL', key)
    for i = 1, #all, 2 do
      if numbers(all[i + 1])[1] <= now then redis.call('HDEL', key, all[i]) end
    end
  end
  local expires_at = now + p.b2
  redis.call('HSET', key, lease, int(expires_at) .. ':' .. int(cost))
  expire(key, math.max(s.latest, expires_at))
end
algorithms[8] = leases
