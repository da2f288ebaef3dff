  -- ---- kind 5: sliding window, two-counter estimate (window.cc) ----
  -- estimate = previous·(window - elapsed)/window + current, compared in integers. Like the fixed
  -- window, the state keeps `expires`, the instant its key's TTL was set to run to (the end of
  -- the window after the current one), and a write that TTL still covers keeps it (KEEPTTL).
  if kind == 5 then
    local window = p2
    limit = p1
    local start, current, previous, expires
    local stored = redis.pcall('GET', key)  -- false when absent, an error table for a non-string
    local size = stored and #stored or 0
    local tag
    if size == 33 then
      tag, start, current, previous, expires = struct.unpack('<c1dddd', stored)
    elseif size == 25 then  -- written by earlier scripts, without `expires`: set the TTL again
      tag, start, current, previous = struct.unpack('<c1ddd', stored)
      expires = 0
    end
    if tag ~= 's' then start, expires = nil, 0 end
    -- Roll the counts forward to the window holding now (sliding_at). An expired state rolls
    -- to empty counts, the same as an absent one; a clock that stepped back keeps the stored
    -- window with elapsed 0.
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
    local weight = window - elapsed  -- of the previous window's count, in 1/window
    local room = limit - current - cost
    if room >= 0 and previous * weight <= room * window then  -- sliding_admits
      current = current + cost
      allowed = 1
    elseif cost <= limit then  -- else never: no retry_after
      -- The estimate only falls as time passes: the first elapsed e that admits cost in this
      -- window (previous·(window - e) <= room·window), else in the next (where current becomes
      -- previous), else after both (sliding_first_fit).
      local allowed_at = start + 2 * window
      local fit = window
      if room >= 0 then
        if previous == 0 then
          fit = 0
        else
          local scaled = room * window
          fit = window - (scaled - scaled % previous) / previous
          if fit < 0 then fit = 0 end
        end
      end
      if fit < window then
        allowed_at = start + fit
      else
        room = limit - cost
        fit = 0
        if current > 0 then
          local scaled = room * window
          fit = window - (scaled - scaled % current) / current
          if fit < 0 then fit = 0 end
        end
        if fit < window then allowed_at = start + window + fit end
      end
      if allowed_at <= now then allowed_at = now + 1 end
      retry = allowed_at - now
    end
    -- remaining: whole units the estimate still admits; reset_after: until both counts are out.
    local capacity = limit * window - previous * weight
    remaining = (capacity - capacity % window) / window - current
    if remaining < 0 then remaining = 0 end
    if current > 0 then
      reset = start + 2 * window - now
    elseif previous > 0 then
      reset = start + window - now
    else
      reset = start - now
    end
    if reset < 0 then reset = 0 end
    if allowed == 1 then
      if expires < now + reset then ttl, expires = reset, now + reset end  -- else keep the TTL
      value = struct.pack('<c1dddd', 's', start, current, previous, expires)
    end
  end
