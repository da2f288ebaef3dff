  -- ---- KIND_SLIDING_WINDOW: sliding window, two-counter estimate (window.cc) ----
  -- estimate = previous·(window - elapsed)/window + current, compared in integers. Like the fixed
  -- window, the state keeps `expires`, the instant its key's TTL was set to run to (the end of
  -- the window after the current one), and a write that TTL still covers keeps it (KEEPTTL).
  if kind == KIND_SLIDING_WINDOW then
    local window = p2
    limit = p1
    -- @sliding_window_state
    local room = limit - current - cost
    if room >= 0 and previous * weight <= room * window then  -- sliding_admits
      current = current + cost
      allowed = 1
    elseif cost <= limit then  -- else never: no retry_after
      local bound = limit
      -- @sliding_retry
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
