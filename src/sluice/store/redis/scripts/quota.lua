-- charge / refund: the quota operations (src/sluice/algorithm/quota.cc and the per-algorithm
-- balance, charge_fit and refund functions), over all limits of one subject in one call, on
-- Redis's clock. They read and write the same keys, in the same formats, as evaluate.lua
-- (common.lua lists them), so acquires and quota operations on one subject see each other.
--
-- ARGV[1]: the request as evaluate.lua reads it (repeats 1, operation, cost, limit count, then
--          kind and four parameters per limit); its operation field is not read.
-- ARGV[2]: 'charge', 'refund', 'reserve', 'settle', 'take' or 'give' (token leases, below).
-- ARGV[3]: max_debt (decimal): a charge may take each limit's balance down to -max_debt.
-- ARGV[4]: reserve / settle: the reservation id. ARGV[5]: reserve: its TTL in µs (decimal).
-- KEYS:    the state key of each limit, in order; for reserve / settle then the reservations
--          hash of the subject (sluice:{<policy>:<subject>}:r): id -> '<dd' estimate, expires_at.
-- reserve charges the estimate (ARGV[1]'s cost) as a charge does and, when charged, records the
-- reservation; settle takes the reservation out and charges actual - estimate (ARGV[1]'s cost is
-- the actual) or refunds estimate - actual. An unknown, settled or expired reservation answers
-- the empty string and changes nothing (an expired one leaves its estimate charged).
-- Reply:   one verdict, eight packed doubles: allowed, limit, remaining, retry_after,
--          reset_after, delay (always -1), limit_index (from 0), balance (signed).
-- take (service/token_leases.h): ARGV[1]'s cost is the most to take, ARGV[4] the least (decimal);
--          it charges min(most, the lowest balance) when that is at least the least, else
--          refuses as a charge of the least would. Reply: the eight doubles, then the units taken
--          and Redis's now (µs) — ten doubles.
-- give:    refunds ARGV[1]'s cost (unused leased units) taken at ARGV[4] (Redis µs): a window
--          limit whose window has moved on since is left alone (its count is no longer the one
--          the units were taken from), a bucket is refunded up to its capacity.
-- A charge writes only when every limit fits and cost > 0; a refund only when cost > 0. Every key
-- written has a TTL; a state back to unused is deleted. Off the hot path, so unlike evaluate.lua
-- this script is written with local functions.
local request = ARGV[1]
local operation = ARGV[2]
local charging = operation == 'charge' or operation == 'reserve' or operation == 'take'
local max_debt = tonumber(ARGV[3])
local _, _, cost, count, position = struct.unpack('<dddd', request)
local estimate = cost  -- reserve: what the reservation records
if operation == 'settle' then
  local reservations = KEYS[count + 1]
  local stored = redis.pcall('HGET', reservations, ARGV[4])
  if type(stored) ~= 'string' or #stored ~= 16 then return '' end
  local expires_at
  estimate, expires_at = struct.unpack('<dd', stored)
  redis.call('HDEL', reservations, ARGV[4])
  if expires_at <= now then return '' end
  charging = cost >= estimate
  if charging then cost = cost - estimate else cost = estimate - cost end
end

local function floor_div(a, b) return (a - a % b) / b end
local function ceil_div(a, b) return (a + (-a) % b) / b end
local function decimal(n) return string.format('%d', n) end
local function ms(us)  -- whole ms, rounded up, at least 1
  local whole = ceil_div(us, 1000)
  if whole < 1 then whole = 1 end
  return decimal(whole)
end
-- Stores `value` until `life` µs from now; a state with no life left equals an absent one.
local function store(key, value, life)
  if life <= 0 then
    redis.call('DEL', key)
  else
    redis.call('SET', key, value, 'PX', ms(life))
  end
end

-- The TAT of kinds 1 and 3 (tat.lua): tat, frac, or nil when absent.
local function read_tat(key)
  local stored = redis.pcall('GET', key)
  local size = stored and #stored or 0
  if size == 0 then return nil end
  local last = string.byte(stored, size)
  if last <= 57 and last >= 48 then return tonumber(stored), 0 end
  if size == 17 then
    local tag, tat, frac = struct.unpack('<c1dd', stored)
    if tag == 't' then return tat, frac end
  end
  return nil
end
local function store_tat(key, tat, frac)
  local value = frac == 0 and decimal(tat) or struct.pack('<c1dd', 't', tat, frac)
  store(key, value, (frac > 0 and tat + 1 or tat) - now)
end

-- One object per limit: standing() -> limit, balance, reset_after of its state now;
-- fit() -> whether the charge fits, and else its retry_after (NONE: never); charge(); refund();
-- write() stores the state.
local function smooth_bucket(key, capacity, rate, period, initial)
  local tat, frac = read_tat(key)
  if tat == nil or (frac > 0 and tat + 1 or tat) <= now then
    local debt = (capacity - initial) * period  -- a new bucket holding `initial` tokens
    frac = debt % rate
    tat = now + (debt - frac) / rate
  end
  -- From here tat >= now: `ahead` is how far, scaled by rate.
  local l = {}
  function l.standing()
    local ahead = (tat - now) * rate + frac
    return capacity, floor_div(capacity * period - ahead, period),
      (frac > 0 and tat + 1 or tat) - now
  end
  function l.fit()
    local deeper = capacity + max_debt
    if cost > deeper then return false, NONE end
    if (tat - now) * rate + frac + cost * period <= deeper * period then return true end
    local shift = frac + (cost - deeper) * period
    return false, tat + ceil_div(shift, rate) - now
  end
  function l.charge()
    local total = frac + cost * period
    frac = total % rate
    tat = tat + (total - frac) / rate
  end
  function l.refund()
    local left = (tat - now) * rate + frac - cost * period
    if left < 0 then left = 0 end
    frac = left % rate
    tat = now + (left - frac) / rate
  end
  function l.write() store_tat(key, tat, frac) end
  return l
end

local function interval_bucket(key, capacity, refill, period, initial)
  local tokens, at
  local stored = redis.pcall('GET', key)
  if stored and #stored == 17 then
    local tag
    tag, tokens, at = struct.unpack('<c1dd', stored)
    if tag ~= 'i' then
      tokens = nil
    elseif tokens < capacity then  -- expired once full again
      if at + ceil_div(capacity - tokens, refill) * period <= now then tokens = nil end
    elseif at <= now then
      tokens = nil
    end
  end
  if tokens == nil then tokens, at = initial, now end
  if now > at and tokens < capacity then  -- refills applied (token_bucket.cc refilled)
    local periods = floor_div(now - at, period)
    if periods * refill >= capacity - tokens then
      tokens = capacity
    else
      tokens = tokens + periods * refill
      at = at + periods * period
    end
  end
  if tokens >= capacity then
    tokens = capacity
    if now > at then at = now end
  end
  local l = {}
  local function reset()
    local until_full = at - now
    if tokens < capacity then
      until_full = at + ceil_div(capacity - tokens, refill) * period - now
    end
    return until_full > 0 and until_full or 0
  end
  function l.standing() return capacity, tokens, reset() end
  function l.fit()
    if tokens - cost >= -max_debt then return true end
    if cost > capacity + max_debt then return false, NONE end
    return false, at + ceil_div(cost - max_debt - tokens, refill) * period - now
  end
  function l.charge() tokens = tokens - cost end
  function l.refund()
    tokens = tokens + cost
    if tokens >= capacity then
      tokens = capacity
      if now > at then at = now end
    end
  end
  function l.write() store(key, struct.pack('<c1dd', 'i', tokens, at), reset()) end
  return l
end

local function leaky_bucket(key, rate, period, max_delay)
  local tat, frac = read_tat(key)
  if tat == nil or (frac > 0 and tat + 1 or tat) <= now then tat, frac = now, 0 end
  local patience = max_delay * rate
  local limit = floor_div(patience, period) + 1
  local l = {}
  function l.standing()
    local ahead = (tat - now) * rate + frac
    return limit, floor_div(patience - ahead, period) + 1, (frac > 0 and tat + 1 or tat) - now
  end
  function l.fit()
    -- balance after >= -max_debt  <=>  ahead <= patience + (max_debt + 1 - cost)·period
    if cost > limit + max_debt then return false, NONE end
    local bound = patience + (max_debt + 1 - cost) * period
    if (tat - now) * rate + frac <= bound then return true end
    return false, tat + ceil_div(frac - bound, rate) - now
  end
  function l.charge()
    local total = frac + cost * period
    frac = total % rate
    tat = tat + (total - frac) / rate
  end
  function l.refund()
    local left = (tat - now) * rate + frac - cost * period
    if left < 0 then left = 0 end
    frac = left % rate
    tat = now + (left - frac) / rate
  end
  function l.write() store_tat(key, tat, frac) end
  return l
end

local function fixed_window(key, limit, window)
  local start, counted
  local stored = redis.pcall('GET', key)
  local size = stored and #stored or 0
  if size == 25 then
    local tag
    tag, start, counted = struct.unpack('<c1ddd', stored)
    if tag ~= 'f' then start = nil end
  elseif size == 17 then
    local tag
    tag, start, counted = struct.unpack('<c1dd', stored)
    if tag ~= 'w' then start = nil end
  end
  local current = now - now % window
  if start == nil or current > start then start, counted = current, 0 end
  local window_end = start + window
  local l = {}
  function l.standing()
    return limit, limit - counted, counted > 0 and window_end - now or 0
  end
  function l.fit()
    if counted + cost <= limit + max_debt then return true end
    if cost > limit + max_debt then return false, NONE end
    return false, window_end - now
  end
  function l.holds(at) return at - at % window == start end
  function l.charge() counted = counted + cost end
  function l.refund()
    counted = counted - cost
    if counted < 0 then counted = 0 end
  end
  -- Kept even when empty, as the memory store keeps it: its window start is what a clock that
  -- steps back keeps counting in. `expires` as fixed_window.lua writes it.
  function l.write()
    store(key, struct.pack('<c1ddd', 'f', start, counted, window_end), window_end - now)
  end
  return l
end

-- A calendar fixed window (calendar_window.lua): the client's period [s0, s1) and the next
-- [s1, s2); Redis's clock picks; a client more than a period behind gets no window (never fits).
local function calendar_window(key, limit, s0, s1, s2)
  local window_end
  if now < s0 then
    window_end = s0
  elseif now < s1 then
    window_end = s1
  elseif now < s2 then
    window_end = s2
  end
  local counted = 0
  local stored = redis.pcall('GET', key)
  if window_end ~= nil and stored and #stored == 17 then
    local tag, stored_end, stored_count = struct.unpack('<c1dd', stored)
    if tag == 'c' and stored_end >= window_end then  -- the same window, or a later one kept
      window_end, counted = stored_end, stored_count
    end
  end
  local l = {}
  function l.standing()
    if window_end == nil then return limit, 0, 0 end
    return limit, limit - counted, counted > 0 and window_end - now or 0
  end
  function l.fit()
    if window_end == nil then return false, NONE end
    if counted + cost <= limit + max_debt then return true end
    if cost > limit + max_debt then return false, NONE end
    return false, window_end - now
  end
  function l.charge() counted = counted + cost end
  function l.refund()
    counted = counted - cost
    if counted < 0 then counted = 0 end
  end
  function l.write()
    if window_end ~= nil then
      store(key, struct.pack('<c1dd', 'c', window_end, counted), window_end - now)
    end
  end
  return l
end

local function sliding_window(key, limit, window)
  local start, current, previous
  local stored = redis.pcall('GET', key)
  local size = stored and #stored or 0
  local tag
  if size == 33 then
    tag, start, current, previous = struct.unpack('<c1dddd', stored)
  elseif size == 25 then
    tag, start, current, previous = struct.unpack('<c1ddd', stored)
  end
  if tag ~= 's' then start = nil end
  local now_start = now - now % window
  local elapsed = 0
  if start == nil then
    start, current, previous, elapsed = now_start, 0, 0, now - now_start
  elseif now_start == start then
    elapsed = now - start
  elseif now_start > start then
    previous = now_start - window == start and current or 0
    start, current, elapsed = now_start, 0, now - now_start
  end
  local weight = window - elapsed
  local l = {}
  local function reset()
    local until_unused = start - now
    if current > 0 then
      until_unused = start + 2 * window - now
    elseif previous > 0 then
      until_unused = start + window - now
    end
    return until_unused > 0 and until_unused or 0
  end
  function l.standing()
    return limit, floor_div(limit * window - previous * weight, window) - current, reset()
  end
  function l.fit()  -- sliding_window.lua's admission and retry for a limit max_debt larger
    local larger = limit + max_debt
    local room = larger - current - cost
    if room >= 0 and previous * weight <= room * window then return true end
    if cost > larger then return false, NONE end
    local allowed_at = start + 2 * window
    local fit = window
    if room >= 0 then
      if previous == 0 then
        fit = 0
      else
        fit = window - floor_div(room * window, previous)
        if fit < 0 then fit = 0 end
      end
    end
    if fit < window then
      allowed_at = start + fit
    else
      fit = 0
      if current > 0 then
        fit = window - floor_div((larger - cost) * window, current)
        if fit < 0 then fit = 0 end
      end
      if fit < window then allowed_at = start + window + fit end
    end
    if allowed_at <= now then allowed_at = now + 1 end
    return false, allowed_at - now
  end
  function l.holds(at) return at - at % window == start end
  function l.charge() current = current + cost end
  function l.refund()  -- the current count first, then the previous one
    local from_current = cost < current and cost or current
    current = current - from_current
    previous = previous - (cost - from_current)
    if previous < 0 then previous = 0 end
  end
  function l.write()
    local life = reset()
    store(key, struct.pack('<c1dddd', 's', start, current, previous, now + life), life)
  end
  return l
end

local function sliding_log(key, limit, window)
  local last = redis.pcall('ZRANGE', key, '-1', '-1', 'WITHSCORES')
  local foreign = last.err ~= nil  -- another algorithm's key: empty, replaced on a charge
  local newest = not foreign and last[2] and tonumber(last[2]) or nil
  -- The log's clock never runs back: it stands at the newest entry if now is earlier.
  local at = now
  if newest and newest > now then at = newest end
  local after = '(' .. decimal(at - window)
  local function used()
    if foreign then return 0 end
    return redis.call('ZCOUNT', key, after, '+inf')
  end
  local l = {}
  function l.standing()
    local units = used()
    local reset = 0
    if units > 0 then
      local top = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')
      reset = tonumber(top[2]) + window - now
    end
    return limit, limit - units, reset
  end
  function l.fit()
    local larger = limit + max_debt
    local units = used()
    if units + cost <= larger then return true end
    if cost > larger then return false, NONE end
    -- Entries leave oldest first: the excess-th oldest unit is the last that must go.
    local entry = redis.call('ZRANGEBYSCORE', key, after, '+inf', 'WITHSCORES', 'LIMIT',
                             units + cost - larger - 1, 1)
    return false, tonumber(entry[2]) + window - now
  end
  function l.charge()  -- sliding_log.lua's commit: members "<at>:<n>", n dense from 1 per instant
    if foreign then redis.call('DEL', key) end
    redis.call('ZREMRANGEBYSCORE', key, '-inf', decimal(at - window))
    local stamp = decimal(at)
    local taken = redis.call('ZCOUNT', key, stamp, stamp)
    local batch = {}
    for n = taken + 1, taken + cost do
      batch[#batch + 1] = stamp
      batch[#batch + 1] = string.format('%d:%d', at, n)
      if #batch == 2000 or n == taken + cost then
        redis.call('ZADD', key, unpack(batch))
        batch = {}
      end
    end
  end
  function l.refund()  -- the newest units first; the highest n of an instant, so n stays dense
    if foreign then return end
    redis.call('ZREMRANGEBYSCORE', key, '-inf', decimal(at - window))
    local left = cost
    while left > 0 do
      local top = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')
      if #top == 0 then break end
      local instant = tonumber(top[2])
      local stamp = decimal(instant)
      local held = redis.call('ZCOUNT', key, stamp, stamp)
      local taken = held < left and held or left
      local batch = {}
      for n = held - taken + 1, held do
        batch[#batch + 1] = string.format('%d:%d', instant, n)
        if #batch == 1000 or n == held then
          redis.call('ZREM', key, unpack(batch))
          batch = {}
        end
      end
      left = left - taken
    end
  end
  function l.write()  -- the key lives until its newest entry leaves (an empty one is gone)
    if foreign and not charging then return end
    local top = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')
    if #top > 0 then redis.call('PEXPIRE', key, ms(tonumber(top[2]) + window - now)) end
  end
  return l
end

local limits = {}
for i = 1, count do
  local kind, p1, p2, p3, p4
  kind, p1, p2, p3, p4, position = struct.unpack('<ddddd', request, position)
  local key = KEYS[i]
  if kind == 1 then
    limits[i] = smooth_bucket(key, p1, p2, p3, p4)
  elseif kind == 2 then
    limits[i] = interval_bucket(key, p1, p2, p3, p4)
  elseif kind == 3 then
    limits[i] = leaky_bucket(key, p1, p2, p3)
  elseif kind == 4 then
    limits[i] = fixed_window(key, p1, p2)
  elseif kind == 8 then
    limits[i] = calendar_window(key, p1, p2, p3, p4)
  elseif kind == 5 then
    limits[i] = sliding_window(key, p1, p2)
  elseif kind == 6 then
    limits[i] = sliding_log(key, p1, p2)
  else  -- the store refuses concurrency limits before calling (quota.h check_quota_limits)
    return redis.error_reply('ERR sluice quota: limit ' .. i .. ' cannot be charged or refunded')
  end
end

if operation == 'take' then  -- as many as every limit holds, up to the most asked
  local available = cost
  for i = 1, count do
    local _, balance = limits[i].standing()
    if balance < available then available = balance end
  end
  local least = tonumber(ARGV[4])
  cost = available >= least and available or least
end
local taken_at = operation == 'give' and tonumber(ARGV[4]) or nil

-- Whether the charge fits every limit, and each one's retry_after when it does not.
local fits, retries, all_fit = {}, {}, true
for i = 1, count do
  if charging then
    fits[i], retries[i] = limits[i].fit()
    if not fits[i] then all_fit = false end
  else
    fits[i] = true
  end
end
if all_fit and cost > 0 then
  for i = 1, count do
    if charging then
      limits[i].charge()
      limits[i].write()
    elseif taken_at == nil or limits[i].holds == nil or limits[i].holds(taken_at) then
      limits[i].refund()
      limits[i].write()
    end
  end
end
if operation == 'reserve' and all_fit then
  -- Recorded until its TTL; the hash lives as long as its longest reservation, and expired
  -- entries are dropped here, so it never holds more than the live ones and those of one TTL.
  local reservations = KEYS[count + 1]
  local ttl = tonumber(ARGV[5])
  local held = redis.pcall('HGETALL', reservations)
  if held.err ~= nil then
    redis.call('DEL', reservations)
    held = {}
  end
  local expired = {}
  for j = 1, #held, 2 do
    local _, at = 0, 0
    if #held[j + 1] == 16 then _, at = struct.unpack('<dd', held[j + 1]) end
    if at <= now then expired[#expired + 1] = held[j] end
  end
  for first = 1, #expired, 1000 do
    redis.call('HDEL', reservations, unpack(expired, first, math.min(first + 999, #expired)))
  end
  redis.call('HSET', reservations, ARGV[4], struct.pack('<dd', estimate, now + ttl))
  local life = tonumber(ms(ttl))
  if redis.call('PTTL', reservations) < life then
    redis.call('PEXPIRE', reservations, decimal(life))
  end
end

-- The deciding verdict (quota.cc): when all fit, the lowest balance (the first of equals); when
-- refused, the longest retry_after among the limits that refuse, one that never fits winning.
local d_index, d_allowed, d_retry
for i = 1, count do
  local allowed = fits[i] and 1 or 0
  local retry = (not fits[i]) and (retries[i] or NONE) or NONE
  local tighter = i == 1
  if not tighter then
    if all_fit then
      local _, balance = limits[i].standing()
      local _, d_balance = limits[d_index].standing()
      tighter = balance < d_balance
    elseif allowed ~= d_allowed then
      tighter = allowed == 0
    elseif allowed == 0 and d_retry ~= NONE then
      tighter = retry == NONE or retry > d_retry
    end
  end
  if tighter then d_index, d_allowed, d_retry = i, allowed, retry end
end
local limit, balance, reset = limits[d_index].standing()
local remaining = balance > 0 and balance or 0
if operation == 'take' then
  return struct.pack('<dddddddddd', all_fit and 1 or 0, limit, remaining, d_retry, reset, NONE,
                     d_index - 1, balance, all_fit and cost or 0, now)
end
return struct.pack('<dddddddd', all_fit and 1 or 0, limit, remaining, d_retry, reset, NONE,
                   d_index - 1, balance)
