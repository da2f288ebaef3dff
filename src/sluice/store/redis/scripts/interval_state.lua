    -- ---- KIND_INTERVAL_BUCKET's state (interval_bucket.lua, quota.lua) ----
    -- The interval bucket as it stands now, read from `key`: its tokens and refilled_at (`at`),
    -- refills applied (token_bucket.cc refilled); an absent or expired state is a new bucket
    -- holding `initial`.
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
    -- Refills applied.
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
