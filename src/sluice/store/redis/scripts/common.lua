-- Shared helpers of the Redis scripts. The algorithms (one file each, mirroring
-- src/sluice/algorithm/*.cc line for line so Redis and memory decide identically) are appended
-- after this file, only those a policy uses, to keep each call's setup small. Integers only: every value is an exact integer in a
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


local function window_start_of(t, window) return fdiv(t, window) * window end

-- ---- the limits ----

-- Each algorithm: load(p, key) -> state (absent, expired or foreign state becomes initial);
-- decide(p, st, cost) -> verdict; commit(p, st, cost, key, lease) writes the new state + TTL.
local algorithms = {}

-- Limit i's parameters from ARGV, starting at index `first`.
local function read_limit(first)
  return {kind = tonumber(ARGV[first]), b1 = tonumber(ARGV[first + 1]),
          b2 = tonumber(ARGV[first + 2]), b3 = tonumber(ARGV[first + 3]),
          b4 = tonumber(ARGV[first + 4])}
end

local function verdict_reply(v, index)
  return {v.allowed, v.limit, v.remaining, v.retry, v.reset, v.delay, index}
end

