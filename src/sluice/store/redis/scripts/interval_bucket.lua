  -- ---- KIND_INTERVAL_BUCKET: token bucket with interval refill (token_bucket.cc) ----
  -- refill tokens arrive at once each whole period since refilled_at; while the bucket is full
  -- its refill clock is idle, restarted by the first request that finds it full.
  if kind == KIND_INTERVAL_BUCKET then
    -- @interval_state
    limit = capacity
    if cost <= tokens then
      tokens = tokens - cost
      allowed = 1
      remaining = tokens
      value = struct.pack('<c1dd', 'i', tokens, at)
    else
      remaining = tokens > 0 and tokens or 0  -- tokens < 0 in debt (quota.lua)
      if cost <= capacity then  -- else never: no retry_after
        local missing = cost - tokens
        retry = at + (missing + (-missing) % refill) / refill * period - now
      end
    end
    -- reset_after: until full again (interval_full_at), for the state after this request.
    if tokens < capacity then
      local missing = capacity - tokens
      reset = at + (missing + (-missing) % refill) / refill * period - now
    else
      reset = at - now
    end
    if reset < 0 then reset = 0 end
    ttl = reset
  end
