-- ---- leaky bucket (leaky_bucket.cc) ----

local function leaky_free_slots(rate, period, max_delay, s)
  local ahead = tat_ahead(s, rate)
  if ahead < 0 then ahead = 0 end
  local slack = max_delay * rate - ahead
  if slack < 0 then return 0 end
  return fdiv(slack, period) + 1
end



local leaky = {}
function leaky.load(p, key)
  local s = read_tat(key)
  if s ~= nil and tat_ceil(s) > now then return s end
  return {tat = now, frac = 0}
end
function leaky.decide(p, s, cost)
  local rate, period, max_delay = p.b1, p.b2, p.b3
  local v = verdict(fdiv(max_delay * rate, period) + 1)
  local start = tat_not_before(s)
  v.reset = tat_ceil(start) - now
  v.remaining = leaky_free_slots(rate, period, max_delay, start)
  if cost > fdiv(9007199254740992 - 1, period) then return v end  -- never: cost·period >= 2^53
  if tat_ahead(start, rate) <= max_delay * rate then
    local nxt = tat_advance(start, cost, rate, period)
    v.allowed = 1
    v.delay = tat_ceil(start) - now
    v.remaining = leaky_free_slots(rate, period, max_delay, nxt)
    v.reset = tat_ceil(nxt) - now
    return v
  end
  v.retry = tat_ceil(start) - max_delay - now
  return v
end
function leaky.commit(p, s, cost, key)
  local nxt = tat_advance(tat_not_before(s), cost, p.b1, p.b2)
  redis.call('SET', key, tat_encode(nxt))
  expire(key, tat_ceil(nxt))
end
algorithms[4] = leaky
