  -- ---- KIND_CONCURRENCY: concurrency (concurrency.cc) ----
  -- A hash of leases, lease id -> '<dd' expires_at, cost; a lease is live until expires_at. A
  -- value of another shape counts as expired and is dropped on the next commit.
  if kind == KIND_CONCURRENCY then
    local lease_ttl = p2
    limit = p1
    local leases = redis.pcall('HGETALL', key)
    local foreign = leases.err ~= nil  -- another algorithm's key: replaced on commit
    local held, latest, expired = 0, now, {}
    if not foreign then
      for j = 1, #leases, 2 do
        local expires_at, units = 0, 0
        if #leases[j + 1] == 16 then expires_at, units = struct.unpack('<dd', leases[j + 1]) end
        if expires_at > now then
          held = held + units
          if expires_at > latest then latest = expires_at end
        else
          expired[#expired + 1] = leases[j]
        end
      end
    end
    if held + cost <= limit then
      allowed = 1
      remaining = limit - held - cost
      local expires_at = now + lease_ttl
      if cost > 0 then
        if expires_at > latest then latest = expires_at end
      end
      reset = latest - now
      ttl = reset  -- the key lives as long as its longest lease
      commit = function()
        if foreign then redis.call('DEL', key) end
        for first = 1, #expired, 1000 do  -- in batches: unpack is bounded by the C stack
          redis.call('HDEL', key, unpack(expired, first, math.min(first + 999, #expired)))
        end
        -- The lease id: the request's bytes after its header (4 doubles) and limits (5 each),
        -- up to the penalty's parameters if any (evaluate.lua lease_end).
        local lease = string.sub(request, 33 + 40 * count, lease_end)
        redis.call('HSET', key, lease, struct.pack('<dd', expires_at, cost))
      end
    else
      remaining = limit - held
      reset = latest - now
      if cost <= limit then  -- else never: no retry_after
        -- Leases end in expiry order: wait until enough units are free.
        local live = {}
        for j = 2, #leases, 2 do
          if #leases[j] == 16 then
            local expires_at, units = struct.unpack('<dd', leases[j])
            if expires_at > now then live[#live + 1] = {expires_at, units} end
          end
        end
        table.sort(live, function(a, b) return a[1] < b[1] end)
        local excess = held + cost - limit
        for _, lease in ipairs(live) do
          excess = excess - lease[2]
          if excess <= 0 then
            retry = lease[1] - now
            break
          end
        end
      end
    end
  end
