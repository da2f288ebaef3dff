  -- ---- KIND_SMOOTH_BUCKET: smooth token bucket, and gcra (token_bucket.cc, tat.h) ----
  -- The state is the TAT, the instant tat + frac/rate when the bucket is full again; scaled by
  -- rate, a TAT `ahead` of now means ahead/period tokens are missing.
  if kind == KIND_SMOOTH_BUCKET then
    local capacity, rate, period, initial = p1, p2, p3, p4
    if tat == nil or (frac > 0 and tat + 1 or tat) <= now then
      -- Absent, or full again by now: a new bucket holding `initial` tokens, which is full again
      -- capacity - initial intervals from now.
      local debt = (capacity - initial) * period
      frac = debt % rate
      tat = now + (debt - frac) / rate
    end
    -- From here tat >= now, so the TAT is also the base of this decision (tat_not_before).
    local full = capacity * period
    local ahead = (tat - now) * rate + frac
    limit = capacity
    if cost <= capacity and ahead + cost * period <= full then
      local left = full - ahead - cost * period
      local total = frac + cost * period  -- advance the TAT by cost intervals (tat_advance)
      frac = total % rate
      tat = tat + (total - frac) / rate
      allowed = 1
      remaining = (left - left % period) / period
      reset = (frac > 0 and tat + 1 or tat) - now
      -- Decimal digits when whole: Redis keeps such a value as an integer object, no string
      -- allocation (docs/redis.md, memory per key).
      value = frac == 0 and string.format('%d', tat) or struct.pack('<c1dd', 't', tat, frac)
      ttl = reset
    else
      local left = full - ahead
      remaining = left > 0 and (left - left % period) / period or 0
      reset = (frac > 0 and tat + 1 or tat) - now
      if cost <= capacity then  -- else never: no retry_after
        -- Allowed from the first t with TAT + (cost - capacity) intervals <= t.
        local shift = frac + (cost - capacity) * period
        retry = tat + (shift + (-shift) % rate) / rate - now
      end
    end
  end
