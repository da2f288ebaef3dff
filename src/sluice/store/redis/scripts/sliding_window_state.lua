    -- ---- KIND_SLIDING_WINDOW's state (sliding_window.lua, quota.lua) ----
    -- The two counts read from `key` and rolled forward to the window holding now, with the
    -- time elapsed in it and the weight of the previous window's count.
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
