-- ---- sliding window (window.cc) ----

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
