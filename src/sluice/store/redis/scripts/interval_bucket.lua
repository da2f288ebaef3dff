  -- ---- kind 2: token bucket with interval refill (token_bucket.cc) ----
  -- refill tokens arrive at once each whole period since refilled_at; while the bucket is full
  -- its refill clock is idle, restarted by the first request that finds it full.
  if kind == 2 then
    local capacity, refill, period, initial = p1, p2, p3, p4
    local tokens, at
    local stored = redis.pcall('GET', key)  -- false when absent, an error table for a non-string
    if stored and #stored == 17 then
      local tag
      tag, tokens, at = struct.unpack('<c1dd', stored)
      if tag ~= 'i' then
        tokens = nil
      elseif tokens < capacity then  -- expired once full again (interval_full_at <= now)
        local missing = capacity - tokens
        if at + (missing + (-missing) % refill) / refill * period <= now then tokens = nil end
      elseif at <= now then
        tokens = nil
      end
    end
    if tokens == nil then tokens, at = initial, now end
    -- The bucket as it stands now, refills applied (refilled).
    if now > at and tokens < capacity then
      local elapsed, missing = now - at, capacity - tokens
      local periods = (elapsed - elapsed % period) / period
      if periods * refill >= missing then  -- periods >= ceil(missing / refill)
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
    limit = capacity
    if cost <= tokens then
      tokens = tokens - cost
      allowed = 1
      remaining = tokens
      value = struct.pack('<c1dd', 'i', tokens, at)
    else
      remaining = tokens > 0 and tokens or 0  -- tokens < 0 in debt (quota.lua)
      if cost <= capacity then  -- else never: no retry_after
        local missing = cost - tokens
        retry = at + (missing + (-missing) % refill) / refill * period - now
      end
    end
    -- reset_after: until full again (interval_full_at), for the state after this request.
    if tokens < capacity then
      local missing = capacity - tokens
      reset = at + (missing + (-missing) % refill) / refill * period - now
    else
      reset = at - now
    end
    if reset < 0 then reset = 0 end
    ttl = reset
  end
