  -- ---- the stored TAT of KIND_SMOOTH_BUCKET and KIND_LEAKY_BUCKET (token_bucket.lua,
  -- leaky_bucket.lua) ----
  -- Both keep a theoretical arrival time: `tat` µs and `frac`/rate µs more; nil when absent.
  -- Stored as decimal text when frac is 0 (Redis keeps it as an integer object: no string
  -- allocation) and as 't' + '<dd' otherwise (common.lua).
  local tat, frac
  if kind == KIND_SMOOTH_BUCKET or kind == KIND_LEAKY_BUCKET then
    local stored = redis.pcall('GET', key)  -- false when absent, an error table for a non-string
    local size = stored and #stored or 0  -- an error table's length is 0
    if size > 0 then
      -- Decimal when it ends in a digit: no packed value ends in one (a double's last byte is its
      -- sign and exponent, 0x00 or >= 0x3f for the integers stored), so 'i', 'w', 's' and the
      -- previous '<d' / '<dd' TATs never parse; "<tat>:<frac>" of older scripts gives nil.
      local last = string.byte(stored, size)
      if last <= 57 and last >= 48 then
        tat, frac = tonumber(stored), 0
      elseif size == 17 then
        local tag
        tag, tat, frac = struct.unpack('<c1dd', stored)
        if tag ~= 't' then tat = nil end
      end
    end
  end

