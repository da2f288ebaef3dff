  -- ---- KIND_CALENDAR_WINDOW: calendar fixed window (window.cc with a calendar; calendar.cc) ----
  -- Periods in a time zone need its rules, which Redis has not: the client sends the bounds of
  -- the period its own clock is in, [s0, s1), and of the next, [s1, s2), and Redis's clock picks
  -- the window: the one ending at s0 (the client is ahead, Redis still in the period before),
  -- at s1, or at s2 (the client is behind, Redis already in the next period). A window is told
  -- apart by its end, since the start of the period before s0 is not sent. Only a client more
  -- than a whole period behind Redis (now >= s2: at least 23 hours) gets no window: denied, never
  -- retried, nothing written (docs/quotas.md#calendar-periods).
  -- State: 17 bytes '<c1dd' 'c', window_end, counted; the key expires at window_end.
  if kind == KIND_CALENDAR_WINDOW then
    limit = p1
    local window_end
    if now < p2 then
      window_end = p2
    elseif now < p3 then
      window_end = p3
    elseif now < p4 then
      window_end = p4
    end
    if window_end ~= nil then
      local counted = 0
      local stored = redis.pcall('GET', key)  -- false when absent, an error table for a non-string
      if stored and #stored == 17 then
        local tag, stored_end, stored_count = struct.unpack('<c1dd', stored)
        if tag == 'c' then
          -- The same window, or a later one kept while the clock stepped back (fixed_at).
          if stored_end >= window_end then window_end, counted = stored_end, stored_count end
        end
      end
      if counted + cost <= limit then
        counted = counted + cost
        allowed = 1
        remaining = limit - counted
        ttl = window_end - now
        value = struct.pack('<c1dd', 'c', window_end, counted)
      else
        remaining = limit - counted
        if remaining < 0 then remaining = 0 end  -- counted > limit in debt (quota.lua)
        if cost <= limit then retry = window_end - now end  -- else never
      end
      -- An empty window (only a cost above the limit is denied there) has nothing to reset.
      if counted > 0 then reset = window_end - now end
    end
  end
