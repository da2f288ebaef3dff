-- The algorithms of DESIGN.md §2 in Lua, mirroring src/sluice/algorithm/*.cc line for line so
-- Redis and memory decide identically. Integers only: every value is an exact integer in a
-- double (validation keeps intermediate products below 2^53); divisions go through fdiv.
--
-- A limit arrives as five ARGV values: kind and four parameters.
--   1 token_bucket smooth   capacity, refill, period, initial
--   2 token_bucket interval capacity, refill, period, initial
--   3 gcra                  rate, period, burst, -
--   4 leaky_bucket          rate, period, max_delay, -
--   5 fixed_window          limit, window, -, -
--   6 sliding_window        limit, window, -, -
--   7 sliding_log           limit, window, -, -
--   8 concurrency           limit, lease_ttl, -, -
-- State per limit key (values tagged so a key of another algorithm reads as absent):
--   TAT (kinds 1, 3, 4)  string "<tat>" or "<tat>:<fraction>"  (exact instant tat + fraction/rate)
--   interval bucket      string "i<tokens>:<refilled_at>"
--   fixed window         string "w<window_start>:<count>"
--   sliding window       string "s<window_start>:<current>:<previous>"
--   sliding log          sorted set, one member "<at>:<n>" per admitted unit, score <at>
--   concurrency          hash lease id -> "<expires_at>:<cost>"
-- Verdicts use -1 for "absent" (retry_after when allowed or never; delay).

local NONE = -1

-- floor(a / b) for b > 0, exact for integers below 2^53 despite the rounded quotient.
local function fdiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q
end

local function cdiv(a, b) return -fdiv(-a, b) end

-- Integers as Redis arguments: tostring() would write 1.7e+15.
local function int(x) return string.format('%.0f', x) end

local function numbers(text)
  local out = {}
  for part in string.gmatch(text, '-?%d+') do out[#out + 1] = tonumber(part) end
  return out
end

local function verdict(limit)
  return {allowed = 0, limit = limit, remaining = 0, retry = NONE, reset = 0, delay = NONE}
end

-- Expiry in whole milliseconds, rounded up, at least 1.
local function expire(key, expires_at)
  local ms = cdiv(expires_at - now, 1000)
  if ms < 1 then ms = 1 end
  redis.call('PEXPIRE', key, ms)
end

-- ---- strings ----

-- The key's string value; nil when absent or when the key holds another type.
local function read_string(key)
  local value = redis.pcall('GET', key)
  if type(value) ~= 'string' then return nil end
  return value
end

-- ---- TAT arithmetic (tat.h) ----

local function tat_not_before(s)
  if s.tat >= now then return s end
  return {tat = now, frac = 0}
end

local function tat_advance(s, n, rate, period)
  local total = s.frac + n * period
  local q = fdiv(total, rate)
  return {tat = s.tat + q, frac = total - q * rate}
end

local function tat_ahead(s, rate) return (s.tat - now) * rate + s.frac end

local function tat_ceil(s)
  if s.frac > 0 then return s.tat + 1 end
  return s.tat
end

local function tat_encode(s)
  if s.frac == 0 then return int(s.tat) end
  return int(s.tat) .. ':' .. int(s.frac)
end

local function read_tat(key)
  local value = read_string(key)
  if value == nil or not string.find(value, '^%d') then return nil end
  local n = numbers(value)
  return {tat = n[1], frac = n[2] or 0}
end

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

-- ---- leaky bucket (leaky_bucket.cc) ----

local function leaky_free_slots(rate, period, max_delay, s)
  local ahead = tat_ahead(s, rate)
  if ahead < 0 then ahead = 0 end
  local slack = max_delay * rate - ahead
  if slack < 0 then return 0 end
  return fdiv(slack, period) + 1
end

-- ---- windows (window.cc) ----

local function window_start_of(t, window) return fdiv(t, window) * window end

local function sliding_at(window, s)
  local start = window_start_of(now, window)
  if start < s.start then return {start = s.start, cur = s.cur, prev = s.prev}, 0 end
  if start == s.start then return {start = s.start, cur = s.cur, prev = s.prev}, now - start end
  local prev = 0
  if start - window == s.start then prev = s.cur end
  return {start = start, cur = 0, prev = prev}, now - start
end

local function sliding_admits(limit, window, c, elapsed, cost)
  local room = limit - c.cur - cost
  if room < 0 then return false end
  return c.prev * (window - elapsed) <= room * window
end

local function sliding_first_fit(limit, window, prev, cur, cost)
  local room = limit - cur - cost
  if room < 0 then return window end
  if prev == 0 then return 0 end
  local e = window - fdiv(room * window, prev)
  if e < 0 then e = 0 end
  return e
end

local function sliding_remaining(limit, window, c, elapsed)
  local capacity = fdiv(limit * window - c.prev * (window - elapsed), window)
  local r = capacity - c.cur
  if r < 0 then r = 0 end
  return r
end

local function sliding_reset_at(window, c)
  if c.cur > 0 then return c.start + 2 * window end
  if c.prev > 0 then return c.start + window end
  return c.start
end

-- ---- the limits ----

-- Each algorithm: load(p, key) -> state (absent, expired or foreign state becomes initial);
-- decide(p, st, cost) -> verdict; commit(p, st, cost, key, lease) writes the new state + TTL.
local algorithms = {}

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

local sliding = {}
function sliding.load(p, key)
  local value = read_string(key)
  if value ~= nil and string.sub(value, 1, 1) == 's' then
    local n = numbers(value)
    local s = {start = n[1], cur = n[2], prev = n[3]}
    if sliding_reset_at(p.b2, s) > now then return s end
  end
  return {start = window_start_of(now, p.b2), cur = 0, prev = 0}
end
function sliding.decide(p, s, cost)
  local limit, window = p.b1, p.b2
  local c, elapsed = sliding_at(window, s)
  local v = verdict(limit)
  if sliding_admits(limit, window, c, elapsed, cost) then
    local after = {start = c.start, cur = c.cur + cost, prev = c.prev}
    v.allowed = 1
    v.remaining = sliding_remaining(limit, window, after, elapsed)
    v.reset = math.max(0, sliding_reset_at(window, after) - now)
    return v
  end
  v.remaining = sliding_remaining(limit, window, c, elapsed)
  v.reset = math.max(0, sliding_reset_at(window, c) - now)
  if cost > limit then return v end
  local allowed_at = c.start + 2 * window
  local this_window = sliding_first_fit(limit, window, c.prev, c.cur, cost)
  local next_window = sliding_first_fit(limit, window, c.cur, 0, cost)
  if this_window < window then
    allowed_at = c.start + this_window
  elseif next_window < window then
    allowed_at = c.start + window + next_window
  end
  v.retry = math.max(allowed_at, now + 1) - now
  return v
end
function sliding.commit(p, s, cost, key)
  local c = sliding_at(p.b2, s)
  c.cur = c.cur + cost
  redis.call('SET', key, 's' .. int(c.start) .. ':' .. int(c.cur) .. ':' .. int(c.prev))
  expire(key, sliding_reset_at(p.b2, c))
end
algorithms[6] = sliding

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

-- Limit i's parameters from ARGV, starting at index `first`.
local function read_limit(first)
  return {kind = tonumber(ARGV[first]), b1 = tonumber(ARGV[first + 1]),
          b2 = tonumber(ARGV[first + 2]), b3 = tonumber(ARGV[first + 3]),
          b4 = tonumber(ARGV[first + 4])}
end

local function verdict_reply(v, index)
  return {v.allowed, v.limit, v.remaining, v.retry, v.reset, v.delay, index}
end
