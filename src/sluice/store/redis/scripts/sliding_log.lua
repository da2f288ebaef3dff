  -- ---- KIND_SLIDING_LOG: sliding log (window.cc) ----
  -- One sorted-set member per admitted unit, scored by its instant, so the cost in the window
  -- (at - window, at] is a ZCOUNT.
  if kind == KIND_SLIDING_LOG then
    local window = p2
    limit = p1
    local last = redis.pcall('ZRANGE', key, '-1', '-1', 'WITHSCORES')
    local foreign = last.err ~= nil  -- another algorithm's key: replaced on commit
    local newest = not foreign and last[2] and tonumber(last[2]) or nil
    if newest and newest + window <= now then newest = nil end  -- every entry expired: empty
    -- The log's clock never runs back: it stands at the newest entry if now is earlier.
    local at, used, after = now, 0, nil
    if newest then
      if newest > now then at = newest end
      after = '(' .. string.format('%d', at - window)
      used = redis.call('ZCOUNT', key, after, '+inf')
    end
    if used + cost <= limit then
      allowed = 1
      remaining = limit - used - cost
      if cost > 0 then
        reset = at + window - now
      elseif used > 0 then
        reset = newest + window - now
      end
      ttl = at + window - now
      commit = function()
        if foreign then redis.call('DEL', key) end
        redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', at - window))
        local stamp = string.format('%d', at)
        local taken = redis.call('ZCOUNT', key, stamp, stamp)  -- entries at this instant
        local batch = {}
        for n = taken + 1, taken + cost do  -- ZADD in batches: unpack is bounded by the C stack
          batch[#batch + 1] = stamp
          batch[#batch + 1] = string.format('%d:%d', at, n)
          if #batch == 2000 or n == taken + cost then
            redis.call('ZADD', key, unpack(batch))
            batch = {}
          end
        end
      end
    else
      remaining = limit - used
      if remaining < 0 then remaining = 0 end  -- used > limit in debt (quota.lua)
      if used > 0 then reset = newest + window - now end
      if cost <= limit then  -- else never: no retry_after
        -- Entries leave the window oldest first: the excess-th oldest is the last that must go.
        local excess = used + cost - limit
        local entry = redis.call('ZRANGEBYSCORE', key, after, '+inf', 'WITHSCORES', 'LIMIT',
                                 excess - 1, 1)
        retry = tonumber(entry[2]) + window - now
      end
    end
  end
