  -- ---- KIND_FIXED_WINDOW: fixed window (window.cc) ----
  -- Windows [k·window, (k+1)·window) aligned to the epoch, each counting its admitted cost. The
  -- state also keeps `expires`, the instant its key's TTL was set to run to (the window's end),
  -- so that a later write into the same window keeps that TTL: `ttl` stays nil, and the write is
  -- SET … KEEPTTL, a third cheaper than setting the TTL again (docs/redis-scripts.md). A window
  -- that outlasts `expires` (its length grew: a policy edit) sets it again.
  -- p3 = 1: denied_cost counted (window.cc commit_denied): a cost this window denies is counted
  -- all the same, and written at once, since the request's other writes wait for an allow.
  if kind == KIND_FIXED_WINDOW then
    local window = p2
    limit = p1
    -- @fixed_window_state
    if counted + cost <= limit then
      counted = counted + cost
      allowed = 1
      remaining = limit - counted
      if expires < window_end then ttl, expires = window_end - now, window_end end
      value = struct.pack('<c1ddd', 'f', start, counted, expires)
    elseif p3 == 1 then
      remaining = 0
      if cost <= limit then retry = window_end - now end
      if cost > 0 and operation ~= OP_INSPECT then
        counted = counted + cost
        local px = nil
        if expires < window_end then px, expires = window_end - now, window_end end
        local packed = struct.pack('<c1ddd', 'f', start, counted, expires)
        if px == nil then
          redis.call('SET', key, packed, 'KEEPTTL')
        else
          local ms = (px + (-px) % 1000) / 1000  -- whole ms, rounded up, at least 1
          if ms < 1 then ms = 1 end
          redis.call('SET', key, packed, 'PX', string.format('%d', ms))
        end
      end
    else
      remaining = limit - counted
      if remaining < 0 then remaining = 0 end  -- counted > limit in debt (quota.lua)
      if cost <= limit then retry = window_end - now end  -- else never
    end
    -- An empty window (only a cost above the limit is denied there) has nothing to reset; a
    -- counting one reports its end all the same (window.cc decide).
    if counted > 0 or p3 == 1 then reset = window_end - now end
  end
