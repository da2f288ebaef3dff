-- charge / refund: the quota operations (src/sluice/algorithm/quota.cc and the per-algorithm
-- balance, charge_fit and refund functions), over all limits of one subject in one call, on
-- Redis's clock. They read and write the same keys, in the same formats, as evaluate.lua
-- (common.lua lists them), so acquires and quota operations on one subject see each other.
--
-- ARGV[1]: the request as evaluate.lua reads it (repeats, operation, cost, limit count, then
--          kind and four parameters per limit), with max_debt (how far below zero a charge may
--          take each limit's balance) in place of the repeat count, and the quota operation in
--          the operation field: QUOTA_CHARGE, QUOTA_REFUND, QUOTA_RESERVE, QUOTA_SETTLE,
--          QUOTA_TAKE or QUOTA_GIVE (token leases, below); script_set.h quota_request. Packed,
--          not decimal ARGVs: each ARGV and tonumber() costs Redis more than a struct field.
-- ARGV[2]: reserve: the reservation's TTL in µs (decimal). ARGV[3]: reserve: the most open
--          reservations one subject may hold (decimal; store.h ReservationLimits).
-- KEYS:    the state key of each limit, in order; for reserve / settle then the reservation's
--          own key (sluice:{<policy>:<subject>}:r:<id>): '<ddd' estimate, expires_at,
--          charged_at (Redis µs when the estimate was charged), with a TTL to expires_at; then
--          the subject's index of open reservations (sluice:{<policy>:<subject>}:r, a sorted set:
--          member id, score expires_at, with a TTL to the latest). A reserve first drops the
--          index's expired members and answers 'full' (changing nothing) when the subject holds
--          the most it may; a settle GETDELs the record and ZREMs its member.
-- reserve charges the estimate (ARGV[1]'s cost) as a charge does and, when charged, records the
-- reservation; settle takes the reservation out and charges actual - estimate (ARGV[1]'s cost is
-- the actual) or refunds estimate - actual, the refund only into the window that counted the
-- reservation (quota.h settle_refund: a fixed window while it is the same, a sliding window's
-- current or previous count, a sliding log's entries at charged_at). An unknown, settled or
-- expired reservation answers the empty string and changes nothing (an expired one leaves its
-- estimate charged).
-- Reply:   one verdict, eight packed doubles: allowed, limit, remaining, retry_after,
--          reset_after, delay (always -1), limit_index (from 0), balance (signed).
-- take (service/token_batches.h): ARGV[1]'s cost is the most to take, ARGV[2] the least (decimal);
--          it charges min(most, the lowest balance) when that is at least the least, else
--          refuses as a charge of the least would. Reply: the eight doubles, then the units taken
--          and Redis's now (µs) — ten doubles.
-- give:    refunds ARGV[1]'s cost (unused leased units) taken at ARGV[2] (Redis µs): a window
--          limit whose window has moved on since is left alone (its count is no longer the one
--          the units were taken from), a bucket is refunded up to its capacity.
-- A charge writes only when every limit fits and cost > 0; a refund only when cost > 0. Every key
-- written has a TTL; a state back to unused is deleted.
--
-- Written for speed as evaluate.lua is (common.lua): Redis runs the whole chunk on every call, so
-- nothing per limit is a function or a table (an object of closures per limit cost more than the
-- operation's arithmetic and commands together; docs/redis-scripts.md). One block per kind reads
-- the state, checks the charge, applies it and reports the standing after.
local request = ARGV[1]
-- The header and the first limit, unpacked at once (evaluate.lua does the same).
local max_debt, operation, cost, count, first_kind, q1, q2, q3, q4, first_position =
  struct.unpack('<ddddddddd', request)
local charging = operation == QUOTA_CHARGE or operation == QUOTA_RESERVE or operation == QUOTA_TAKE
local estimate = cost  -- reserve: what the reservation records
local charged_at  -- settle: when the reservation's estimate was charged
if operation == QUOTA_RESERVE then  -- within the subject's bound of open reservations
  local index = KEYS[count + 2]
  redis.call('ZREMRANGEBYSCORE', index, '-inf', string.format('%d', now))
  if redis.call('ZCARD', index) >= tonumber(ARGV[3]) then return 'full' end
elseif operation == QUOTA_SETTLE then
  local stored = redis.pcall('GETDEL', KEYS[count + 1])
  redis.call('ZREM', KEYS[count + 2], string.sub(KEYS[count + 1], #KEYS[count + 2] + 2))
  local size = stored and #stored or 0  -- absent, or an error table: length 0
  local expires_at
  if size == 24 then
    estimate, expires_at, charged_at = struct.unpack('<ddd', stored)
  elseif size == 16 then  -- recorded before charged_at was: refunded into no window
    estimate, expires_at = struct.unpack('<dd', stored)
    charged_at = 0
  else
    return ''
  end
  if expires_at <= now then return '' end
  charging = cost >= estimate
  if charging then cost = cost - estimate else cost = estimate - cost end
end

-- Stores `value` until `life` µs from now (whole ms, rounded up); a state with no life left equals
-- an absent one. `keep`: the key's TTL already runs at least that long (SET … KEEPTTL).
local function store(key, value, life, keep)
  if life <= 0 then
    redis.call('DEL', key)
  elseif keep then
    redis.call('SET', key, value, 'KEEPTTL')
  else
    redis.call('SET', key, value, 'PX', string.format('%d', (life + (-life) % 1000) / 1000))
  end
end

-- A sliding log's entries ("<instant>:<n>", n dense from 1 per instant): removes up to `count`
-- of those at `instant`, the highest n first so n stays dense, in ZREM batches of 1 000; answers
-- how many it removed and the newest instant left (nil: none).
local function remove_at_instant(key, instant, count)
  local stamp = string.format('%d', instant)
  local held = redis.call('ZCOUNT', key, stamp, stamp)
  local taken = held < count and held or count
  local batch = {}
  for n = held - taken + 1, held do
    batch[#batch + 1] = string.format('%d:%d', instant, n)
    if #batch == 1000 or n == held then
      redis.call('ZREM', key, unpack(batch))
      batch = {}
    end
  end
  local top = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')
  return taken, top[2] and tonumber(top[2]) or nil
end

-- Passes over the limits, each reading every state again (a GET per limit and pass costs less
-- than keeping the states in tables, and most policies have one limit):
--   1 (take only) finds the lowest balance, which sets the cost;
--   2 (several limits) checks that a charge fits every limit, and that every limit's kind can
--     be charged at all, before anything is written;
--   3 applies the operation (a charge only when every limit fits) and reports.
-- One limit needs no pass 2: pass 3 checks and applies in one go.
local single = count == 1
local taking = operation == QUOTA_TAKE
-- give: the take's instant; a settle's refund: the reservation's (only into its window).
local taken_at = operation == QUOTA_GIVE and tonumber(ARGV[2]) or nil
local settling = operation == QUOTA_SETTLE and not charging
if settling then taken_at = charged_at end
local available = cost  -- take: the most every limit holds, up to the most asked
local all_fit = true
-- The deciding limit's verdict (quota.cc): when all fit, the lowest balance after the operation
-- (the first of equals); when refused, the longest retry_after among the limits that refuse, one
-- that never fits winning.
local d_index, d_fits, d_retry, d_limit, d_balance, d_reset
local pass = taking and 1 or (single and 3 or 2)
while pass <= 3 do
  local checking = charging and (pass == 2 or (pass == 3 and single))
  local kind, p1, p2, p3, p4, position = first_kind, q1, q2, q3, q4, first_position
  for i = 1, count do
    if i > 1 then kind, p1, p2, p3, p4, position = struct.unpack('<ddddd', request, position) end
    local key = KEYS[i]
    -- Set by the kind's block: whether the operation fits this limit (and else its retry_after),
    -- and the limit's standing after whatever this pass did.
    local fits, retry = true, NONE
    local limit, balance, reset
    -- Whether this pass changes this limit, once it knows `fits` (checked first in pass 3 when
    -- single); a give leaves a window that moved on since the take alone.
    local applying = pass == 3 and cost > 0

    -- @tat

    -- ---- KIND_SMOOTH_BUCKET: smooth token bucket and gcra; KIND_LEAKY_BUCKET (tat.h) ----
    -- Scaled by rate, a TAT `ahead` of now is that much of the bucket used (or of the queue's
    -- patience taken); the balance is what is left of `room` in whole periods, and a charge fits
    -- while it leaves at least -max_debt.
    if kind == KIND_SMOOTH_BUCKET or kind == KIND_LEAKY_BUCKET then
      local rate, period, room
      if kind == KIND_SMOOTH_BUCKET then
        local capacity, initial
        capacity, rate, period, initial = p1, p2, p3, p4
        if tat == nil or (frac > 0 and tat + 1 or tat) <= now then
          -- Absent, or full again: a new bucket holding `initial` tokens.
          local debt = (capacity - initial) * period
          frac = debt % rate
          tat = now + (debt - frac) / rate
        end
        limit, room = capacity, capacity * period
      else
        local max_delay
        rate, period, max_delay = p1, p2, p3
        if tat == nil or (frac > 0 and tat + 1 or tat) <= now then tat, frac = now, 0 end
        local patience = max_delay * rate
        limit, room = (patience - patience % period) / period + 1, patience + period
      end
      if checking then
        local bound = room + (max_debt - cost) * period
        if cost > limit + max_debt then
          fits = false
        elseif (tat - now) * rate + frac > bound then
          local shift = frac - bound
          fits, retry = false, tat + (shift + (-shift) % rate) / rate - now
        end
      end
      if applying and fits then
        if charging then  -- the TAT moves cost intervals on (tat_advance)
          local total = frac + cost * period
          frac = total % rate
          tat = tat + (total - frac) / rate
        else  -- and back, never before now
          local left = (tat - now) * rate + frac - cost * period
          if left < 0 then left = 0 end
          frac = left % rate
          tat = now + (left - frac) / rate
        end
        local life = (frac > 0 and tat + 1 or tat) - now
        if life <= 0 then
          redis.call('DEL', key)
        else
          redis.call('SET', key,
                     frac == 0 and string.format('%d', tat) or struct.pack('<c1dd', 't', tat, frac),
                     'PX', string.format('%d', (life + (-life) % 1000) / 1000))
        end
      end
      local left = room - (tat - now) * rate - frac
      balance = (left - left % period) / period
      reset = (frac > 0 and tat + 1 or tat) - now

    -- ---- KIND_INTERVAL_BUCKET: token bucket with interval refill (interval_bucket.lua) ----
    elseif kind == KIND_INTERVAL_BUCKET then
      -- @interval_state
      if checking and tokens - cost < -max_debt then
        fits = false
        if cost <= capacity + max_debt then
          local missing = cost - max_debt - tokens
          retry = at + (missing + (-missing) % refill) / refill * period - now
        end
      end
      if applying and fits then
        if charging then
          tokens = tokens - cost
        else
          tokens = tokens + cost
          if tokens >= capacity then
            tokens = capacity
            if now > at then at = now end
          end
        end
      end
      reset = at - now  -- until full again (interval_full_at)
      if tokens < capacity then
        local missing = capacity - tokens
        reset = at + (missing + (-missing) % refill) / refill * period - now
      end
      if reset < 0 then reset = 0 end
      if applying and fits then store(key, struct.pack('<c1dd', 'i', tokens, at), reset) end
      limit, balance = capacity, tokens

    -- ---- KIND_FIXED_WINDOW: fixed window (fixed_window.lua) ----
    -- Kept even when empty, as the memory store keeps it: its window start is what a clock that
    -- steps back keeps counting in. `expires` as fixed_window.lua writes it (KEEPTTL while the
    -- key's TTL already runs to the window's end).
    elseif kind == KIND_FIXED_WINDOW then
      local window = p2
      -- @fixed_window_state
      limit = p1
      if checking and counted + cost > limit + max_debt then
        fits = false
        if cost <= limit + max_debt then retry = window_end - now end
      end
      if taken_at ~= nil and taken_at - taken_at % window ~= start then applying = false end
      if applying and fits then
        counted = charging and counted + cost or counted - cost
        if counted < 0 then counted = 0 end
        store(key, struct.pack('<c1ddd', 'f', start, counted, window_end), window_end - now,
              expires >= window_end)
      end
      balance, reset = limit - counted, counted > 0 and window_end - now or 0

    -- ---- KIND_CALENDAR_WINDOW: calendar fixed window (calendar_window.lua) ----
    -- The client's period [s0, s1) and the next [s1, s2); Redis's clock picks; a client more than
    -- a period behind gets no window (never fits, nothing written).
    elseif kind == KIND_CALENDAR_WINDOW then
      local window_end
      if now < p2 then
        window_end = p2
      elseif now < p3 then
        window_end = p3
      elseif now < p4 then
        window_end = p4
      end
      local counted = 0
      if window_end ~= nil then
        local stored = redis.pcall('GET', key)
        if stored and #stored == 17 then
          local tag, stored_end, stored_count = struct.unpack('<c1dd', stored)
          if tag == 'c' and stored_end >= window_end then  -- the same window, or a later one kept
            window_end, counted = stored_end, stored_count
          end
        end
      end
      limit = p1
      if checking then
        if window_end == nil then
          fits = false
        elseif counted + cost > limit + max_debt then
          fits = false
          if cost <= limit + max_debt then retry = window_end - now end
        end
      end
      if settling then  -- refunded only into the window that counted it
        local from = window_end == p3 and p2 or (window_end == p4 and p3 or nil)
        if from == nil or taken_at < from or taken_at >= window_end then applying = false end
      end
      if applying and fits and window_end ~= nil then
        counted = charging and counted + cost or counted - cost
        if counted < 0 then counted = 0 end
        store(key, struct.pack('<c1dd', 'c', window_end, counted), window_end - now)
      end
      if window_end == nil then
        balance, reset = 0, 0
      else
        balance, reset = limit - counted, counted > 0 and window_end - now or 0
      end

    -- ---- KIND_SLIDING_WINDOW: sliding window (sliding_window.lua) ----
    elseif kind == KIND_SLIDING_WINDOW then
      local window = p2
      -- @sliding_window_state
      limit = p1
      if checking then  -- sliding_window.lua's admission and retry for a limit max_debt larger
        local larger = limit + max_debt
        local room = larger - current - cost
        if room < 0 or previous * weight > room * window then
          fits = false
          if cost <= larger then
            local bound = larger
            -- @sliding_retry
          end
        end
      end
      local into_previous = false  -- a settle of a reservation counted in the previous window
      if taken_at ~= nil and taken_at - taken_at % window ~= start then
        if settling and taken_at - taken_at % window == start - window then
          into_previous = true
        else
          applying = false
        end
      end
      if applying and fits then
        if charging then
          current = current + cost
        elseif settling then  -- only the count that holds the reservation
          if into_previous then
            previous = previous - cost
            if previous < 0 then previous = 0 end
          else
            current = current - cost
            if current < 0 then current = 0 end
          end
        else  -- the current count first, then the previous one
          local from_current = cost < current and cost or current
          current = current - from_current
          previous = previous - (cost - from_current)
          if previous < 0 then previous = 0 end
        end
      end
      reset = start - now  -- until unused
      if current > 0 then
        reset = start + 2 * window - now
      elseif previous > 0 then
        reset = start + window - now
      end
      if reset < 0 then reset = 0 end
      if applying and fits then
        local keep = expires >= now + reset
        if not keep then expires = now + reset end
        store(key, struct.pack('<c1dddd', 's', start, current, previous, expires), reset, keep)
      end
      local part = limit * window - previous * weight
      balance = (part - part % window) / window - current

    -- ---- KIND_SLIDING_LOG: sliding log (sliding_log.lua) ----
    elseif kind == KIND_SLIDING_LOG then
      local window = p2
      local last = redis.pcall('ZRANGE', key, '-1', '-1', 'WITHSCORES')
      local foreign = last.err ~= nil  -- another algorithm's key: empty, replaced on a charge
      local newest = not foreign and last[2] and tonumber(last[2]) or nil
      -- The log's clock never runs back: it stands at the newest entry if now is earlier.
      local at = now
      if newest and newest > now then at = newest end
      local used = 0  -- units in the window (at - window, at]
      local after = '(' .. string.format('%d', at - window)
      if newest and newest > at - window then used = redis.call('ZCOUNT', key, after, '+inf') end
      limit = p1
      if checking and used + cost > limit + max_debt then
        fits = false
        if cost <= limit + max_debt then
          -- Entries leave oldest first: the excess-th oldest unit is the last that must go.
          local entry = redis.call('ZRANGEBYSCORE', key, after, '+inf', 'WITHSCORES', 'LIMIT',
                                   used + cost - limit - max_debt - 1, 1)
          retry = tonumber(entry[2]) + window - now
        end
      end
      if applying and fits and (charging or not foreign) then
        if foreign or (newest and newest <= at - window) then  -- nothing left to keep
          redis.call('DEL', key)
          newest = nil
        elseif newest then
          redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', at - window))
        end
        if charging then  -- members "<at>:<n>", n dense from 1 per instant (sliding_log.lua)
          local stamp = string.format('%d', at)
          local taken = newest == at and redis.call('ZCOUNT', key, stamp, stamp) or 0
          local batch = {}
          for n = taken + 1, taken + cost do
            batch[#batch + 1] = stamp
            batch[#batch + 1] = string.format('%d:%d', at, n)
            if #batch == 2000 or n == taken + cost then
              redis.call('ZADD', key, unpack(batch))
              batch = {}
            end
          end
          used, newest = used + cost, at
        elseif settling then  -- only the units at charged_at still in the window, highest n first
          if taken_at > at - window then
            local taken
            taken, newest = remove_at_instant(key, taken_at, cost)
            used = used - taken
          end
        else  -- the newest units first; the highest n of an instant, so n stays dense
          local left = cost < used and cost or used
          used = used - left
          while left > 0 do
            local taken
            taken, newest = remove_at_instant(key, newest, left)
            left = left - taken
          end
        end
        -- The key lives until its newest entry leaves (an empty one is gone).
        if newest then
          local life = newest + window - now
          redis.call('PEXPIRE', key, string.format('%d', (life + (-life) % 1000) / 1000))
        end
      end
      balance, reset = limit - used, used > 0 and newest + window - now or 0

    else  -- the store refuses concurrency limits before calling (quota.h check_quota_limits)
      return redis.error_reply('ERR sluice quota: limit ' .. i .. ' cannot be charged or refunded')
    end

    if not fits then all_fit = false end
    if single then
      d_index, d_fits, d_retry, d_limit, d_balance, d_reset = 1, fits, retry, limit, balance, reset
      if pass == 1 then available = balance < cost and balance or cost end
    elseif pass == 1 then
      if balance < available then available = balance end
    else
      local tighter = i == 1
      if not tighter then
        if pass == 3 then  -- all fit: the lowest balance
          tighter = balance < d_balance
        elseif fits ~= d_fits then
          tighter = not fits
        elseif not fits and d_retry ~= NONE then
          tighter = retry == NONE or retry > d_retry
        end
      end
      if tighter then
        d_index, d_fits, d_retry = i, fits, retry
        d_limit, d_balance, d_reset = limit, balance, reset
      end
    end
  end
  if pass == 1 then  -- take: as many as every limit holds, else the least, refused if it fails
    local least = tonumber(ARGV[2])
    cost = available >= least and available or least
    pass = single and 3 or 2
  elseif pass == 2 and not all_fit then
    break
  else
    pass = pass + 1
  end
end

if operation == QUOTA_RESERVE and all_fit then  -- recorded until its TTL, and in the index
  local ttl = tonumber(ARGV[2])
  local ttl_ms = (ttl + (-ttl) % 1000) / 1000
  redis.call('SET', KEYS[count + 1], struct.pack('<ddd', estimate, now + ttl, now), 'PX',
             string.format('%d', ttl_ms))
  local index = KEYS[count + 2]
  redis.call('ZADD', index, string.format('%d', now + ttl),
             string.sub(KEYS[count + 1], #index + 2))
  if redis.call('PTTL', index) < ttl_ms then
    redis.call('PEXPIRE', index, string.format('%d', ttl_ms))
  end
end

local remaining = d_balance > 0 and d_balance or 0
local allowed = all_fit and 1 or 0
if taking then
  return struct.pack('<dddddddddd', allowed, d_limit, remaining, d_retry, d_reset, NONE,
                     d_index - 1, d_balance, all_fit and cost or 0, now)
end
return struct.pack('<dddddddd', allowed, d_limit, remaining, d_retry, d_reset, NONE, d_index - 1,
                   d_balance)
