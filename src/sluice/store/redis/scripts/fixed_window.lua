-- ---- fixed window (window.cc) ----


local fixed = {}
function fixed.load(p, key)
  local value = read_string(key)
  if value ~= nil and string.sub(value, 1, 1) == 'w' then
    local n = numbers(value)
    if n[1] + p.b2 > now then return {start = n[1], count = n[2]} end
  end
  return {start = window_start_of(now, p.b2), count = 0}
end
local function fixed_at(p, s)
  local start = window_start_of(now, p.b2)
  if start > s.start then return {start = start, count = 0} end
  return s
end
function fixed.decide(p, s, cost)
  local limit, window = p.b1, p.b2
  local cur = fixed_at(p, s)
  local window_end = cur.start + window
  local v = verdict(limit)
  if cur.count + cost <= limit then
    local count = cur.count + cost
    v.allowed = 1
    v.remaining = limit - count
    if count > 0 then v.reset = window_end - now end
    return v
  end
  v.remaining = limit - cur.count
  -- An empty window (only a cost above the limit is denied there) has nothing to reset.
  if cur.count > 0 then v.reset = window_end - now end
  if cost <= limit then v.retry = window_end - now end
  return v
end
function fixed.commit(p, s, cost, key)
  local cur = fixed_at(p, s)
  redis.call('SET', key, 'w' .. int(cur.start) .. ':' .. int(cur.count + cost))
  expire(key, cur.start + p.b2)
end
algorithms[5] = fixed
