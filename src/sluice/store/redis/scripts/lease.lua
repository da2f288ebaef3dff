-- release / renew a concurrency lease in every concurrency limit of a policy.
-- KEYS[i]: the state key of each concurrency limit. ARGV: 'release' or 'renew', the lease id,
-- then the lease_ttl (µs, decimal) of each key. Replies 1 when any limit had the lease live,
-- else 0 (concurrency.cc release / renew).
local operation, lease = ARGV[1], ARGV[2]
local done = 0
for i = 1, #KEYS do
  local key = KEYS[i]
  local stored = redis.pcall('HGET', key, lease)
  if type(stored) == 'string' and #stored == 16 then
    local expires_at, units = struct.unpack('<dd', stored)
    local live = expires_at > now
    if operation == 'release' then
      redis.call('HDEL', key, lease)
      if live then done = 1 end
    elseif live then
      local renewed = now + tonumber(ARGV[2 + i])
      if renewed < expires_at then renewed = expires_at end
      redis.call('HSET', key, lease, struct.pack('<dd', renewed, units))
      -- The key lives as long as its longest lease: extend its TTL if this one now outlives it.
      local life = renewed - now
      local ms = (life + (-life) % 1000) / 1000
      if ms < 1 then ms = 1 end
      if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, string.format('%d', ms)) end
      done = 1
    end
  end
end
return done
