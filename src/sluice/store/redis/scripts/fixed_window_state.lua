    -- ---- KIND_FIXED_WINDOW's state (fixed_window.lua, quota.lua) ----
    -- The fixed window holding now, read from `key`: its start, count, end and `expires`.
    local start, counted, expires
    local stored = redis.pcall('GET', key)  -- false when absent, an error table for a non-string
    local size = stored and #stored or 0
    if size == 25 then
      local tag
      tag, start, counted, expires = struct.unpack('<c1ddd', stored)
      if tag ~= 'f' then start = nil end
    elseif size == 17 then  -- written by earlier scripts, without `expires`: set the TTL again
      local tag
      tag, start, counted = struct.unpack('<c1dd', stored)
      if tag ~= 'w' then start = nil end
      expires = 0
    end
    -- A later window starts empty (an expired state is always an earlier window); a clock that
    -- stepped back keeps the stored window (fixed_at).
    local current = now - now % window
    if start == nil or current > start then start, counted, expires = current, 0, 0 end
    local window_end = start + window
