-- release / renew a concurrency lease in every concurrency limit of a policy.
-- KEYS[i]: state key of each concurrency limit. ARGV: 'release' or 'renew', lease id, then the
-- lease_ttl of each key. Replies 1 when any limit had the lease live, else 0.
local operation, lease = ARGV[1], ARGV[2]
local done = 0
for i = 1, #KEYS do
  local key = KEYS[i]
  local value = redis.pcall('HGET', key, lease)
  if type(value) == 'string' then
    local n = numbers(value)
    local live = n[1] > now
    if operation == 'release' then
      redis.call('HDEL', key, lease)
      if live then done = 1 end
    elseif live then
      local ttl = tonumber(ARGV[2 + i])
      local expires_at = math.max(n[1], now + ttl)
      redis.call('HSET', key, lease, int(expires_at) .. ':' .. int(n[2]))
      if redis.call('PTTL', key) < cdiv(expires_at - now, 1000) then expire(key, expires_at) end
      done = 1
    end
  end
end
return done
