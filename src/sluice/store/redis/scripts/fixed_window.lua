  -- ---- kind 4: fixed window (window.cc) ----
  -- Windows [k·window, (k+1)·window) aligned to the epoch, each counting its admitted cost.
  if kind == 4 then
    local window = p2
    limit = p1
    local start, counted
    local stored = redis.pcall('GET', key)  -- false when absent, an error table for a non-string
    if stored and #stored == 17 then
      local tag
      tag, start, counted = struct.unpack('<c1dd', stored)
      if tag ~= 'w' then start = nil end
    end
    -- A later window starts empty (an expired state is always an earlier window); a clock that
    -- stepped back keeps the stored window (fixed_at).
    local current = now - now % window
    if start == nil or current > start then start, counted = current, 0 end
    local window_end = start + window
    if counted + cost <= limit then
      counted = counted + cost
      allowed = 1
      remaining = limit - counted
      value = struct.pack('<c1dd', 'w', start, counted)
      ttl = window_end - now
    else
      remaining = limit - counted
      if cost <= limit then retry = window_end - now end  -- else never
    end
    -- An empty window (only a cost above the limit is denied there) has nothing to reset.
    if counted > 0 then reset = window_end - now end
  end
