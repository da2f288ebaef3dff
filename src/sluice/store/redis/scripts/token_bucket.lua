-- ---- smooth bucket: token_bucket smooth and gcra (token_bucket.cc) ----

local function bucket_tokens(capacity, rate, period, s)
  local ahead = tat_ahead(s, rate)
  if ahead < 0 then ahead = 0 end
  local tokens = fdiv(capacity * period - ahead, period)
  if tokens < 0 then tokens = 0 end
  return tokens
end

local function smooth_decide(capacity, rate, period, s, cost)
  local v = verdict(capacity)
  local base = tat_not_before(s)
  v.remaining = bucket_tokens(capacity, rate, period, base)
  v.reset = tat_ceil(base) - now
  if cost > capacity then return v end
  local nxt = tat_advance(base, cost, rate, period)
  if tat_ahead(nxt, rate) <= capacity * period then
    v.allowed = 1
    v.remaining = bucket_tokens(capacity, rate, period, nxt)
    v.reset = tat_ceil(nxt) - now
    return v
  end
  v.retry = base.tat + cdiv(base.frac + (cost - capacity) * period, rate) - now
  return v
end



local smooth = {}
function smooth.params(p)
  if p.kind == 3 then return p.b3 + 1, p.b1, p.b2 end  -- gcra: capacity burst + 1
  return p.b1, p.b2, p.b3
end
function smooth.load(p, key)
  local s = read_tat(key)
  if s ~= nil and tat_ceil(s) > now then return s end
  local capacity, rate, period = smooth.params(p)
  if p.kind == 1 and p.b4 >= 0 then  -- token_bucket with `initial` tokens
    return tat_advance({tat = now, frac = 0}, capacity - p.b4, rate, period)
  end
  return {tat = now, frac = 0}
end
function smooth.decide(p, s, cost)
  local capacity, rate, period = smooth.params(p)
  return smooth_decide(capacity, rate, period, s, cost)
end
function smooth.commit(p, s, cost, key)
  local _, rate, period = smooth.params(p)
  local nxt = tat_advance(tat_not_before(s), cost, rate, period)
  redis.call('SET', key, tat_encode(nxt))
  expire(key, tat_ceil(nxt))
end
algorithms[1] = smooth
algorithms[3] = smooth
