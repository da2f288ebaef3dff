  -- ---- KIND_LEAKY_BUCKET: leaky bucket (leaky_bucket.cc, tat.h) ----
  -- The state is the TAT, the instant tat + frac/rate when the queue is empty. A request is
  -- scheduled at max(TAT, now) and admitted when that is at most max_delay away.
  if kind == KIND_LEAKY_BUCKET then
    local rate, period, max_delay = p1, p2, p3
    if tat == nil or (frac > 0 and tat + 1 or tat) <= now then tat, frac = now, 0 end
    -- tat >= now: the queue's wait, scaled by rate, is `ahead`; it may wait up to `patience`.
    local ahead = (tat - now) * rate + frac
    local patience = max_delay * rate
    local start = frac > 0 and tat + 1 or tat  -- the first whole µs of the scheduled slot
    limit = (patience - patience % period) / period + 1
    reset = start - now
    if ahead <= patience then  -- free slots: one now, plus one per interval of slack
      local slack = patience - ahead
      remaining = (slack - slack % period) / period + 1
    end
    if cost * period >= 9007199254740992 or cost * period > 3155760000000000 * rate then
      -- never: the request's own emission time cost·period/rate passes the 100-year horizon
      -- (C++: the same test). Once cost·period < 2^53, a rounded horizon·rate still compares right.
    elseif ahead <= patience then
      local total = frac + cost * period  -- advance the TAT by cost intervals (tat_advance)
      frac = total % rate
      tat = tat + (total - frac) / rate
      local slack = patience - ahead - cost * period
      allowed = 1
      delay = start - now
      remaining = slack >= 0 and (slack - slack % period) / period + 1 or 0
      reset = (frac > 0 and tat + 1 or tat) - now
      -- Decimal digits when whole: Redis keeps such a value as an integer object, no string
      -- allocation (docs/redis.md, memory per key).
      value = frac == 0 and string.format('%d', tat) or struct.pack('<c1dd', 't', tat, frac)
      ttl = reset
    else
      retry = start - max_delay - now
    end
  end
