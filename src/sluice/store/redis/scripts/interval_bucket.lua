-- ---- interval bucket (token_bucket.cc) ----

local function interval_refilled(capacity, refill, period, s)
  local r = {tokens = s.tokens, at = s.at}
  if now > s.at and s.tokens < capacity then
    local periods = fdiv(now - s.at, period)
    local needed = cdiv(capacity - s.tokens, refill)
    if periods >= needed then
      r.tokens = capacity
    else
      r.tokens = s.tokens + periods * refill
      r.at = s.at + periods * period
    end
  end
  if r.tokens >= capacity then
    r.tokens = capacity
    if now > s.at then r.at = now end
  end
  return r
end

local function interval_full_at(capacity, refill, period, s)
  if s.tokens >= capacity then return s.at end
  return s.at + cdiv(capacity - s.tokens, refill) * period
end



local interval = {}
function interval.load(p, key)
  local value = read_string(key)
  if value ~= nil and string.sub(value, 1, 1) == 'i' then
    local n = numbers(value)
    local s = {tokens = n[1], at = n[2]}
    if interval_full_at(p.b1, p.b2, p.b3, s) > now then return s end
  end
  local tokens = p.b1
  if p.b4 >= 0 then tokens = p.b4 end
  return {tokens = tokens, at = now}
end
function interval.decide(p, s, cost)
  local capacity, refill, period = p.b1, p.b2, p.b3
  local cur = interval_refilled(capacity, refill, period, s)
  local v = verdict(capacity)
  if cost <= cur.tokens then
    local after = {tokens = cur.tokens - cost, at = cur.at}
    v.allowed = 1
    v.remaining = after.tokens
    v.reset = math.max(0, interval_full_at(capacity, refill, period, after) - now)
    return v
  end
  v.remaining = cur.tokens
  v.reset = math.max(0, interval_full_at(capacity, refill, period, cur) - now)
  if cost <= capacity then
    v.retry = cur.at + cdiv(cost - cur.tokens, refill) * period - now
  end
  return v
end
function interval.commit(p, s, cost, key)
  local cur = interval_refilled(p.b1, p.b2, p.b3, s)
  cur.tokens = cur.tokens - cost
  redis.call('SET', key, 'i' .. int(cur.tokens) .. ':' .. int(cur.at))
  expire(key, interval_full_at(p.b1, p.b2, p.b3, cur))
end
algorithms[2] = interval
