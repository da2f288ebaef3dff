-- release / renew a concurrency lease in every concurrency limit of a policy; or list them.
-- KEYS[i]: the state key of each concurrency limit. ARGV: 'release' or 'renew', the lease id,
-- then the lease_ttl (µs, decimal) of each key. Replies 1 when any limit had the lease live,
-- else 0 (concurrency.cc release / renew).
local operation, lease = ARGV[1], ARGV[2]
-- 'list' (the admin inspector; writes nothing): ARGV[2] is how many leases to list per key at
-- most (decimal). Replies per key: the live leases' count, their units, then id, µs to expiry
-- and units of the first ARGV[2] of them, soonest expiry first (ties by id).
if operation == 'list' then
  local max = tonumber(ARGV[2])
  local reply = {}
  for i = 1, #KEYS do
    local stored = redis.pcall('HGETALL', KEYS[i])
    local live, units = {}, 0
    if stored.err == nil then  -- another algorithm's key holds no leases
      for j = 1, #stored, 2 do
        if #stored[j + 1] == 16 then
          local expires_at, cost = struct.unpack('<dd', stored[j + 1])
          if expires_at > now then
            live[#live + 1] = {expires_at, stored[j], cost}
            units = units + cost
          end
        end
      end
    end
    table.sort(live, function(a, b)
      if a[1] ~= b[1] then return a[1] < b[1] end
      return a[2] < b[2]
    end)
    local entry = {#live, units}
    for j = 1, math.min(max, #live) do
      entry[#entry + 1] = live[j][2]
      entry[#entry + 1] = live[j][1] - now
      entry[#entry + 1] = live[j][3]
    end
    reply[i] = entry
  end
  return reply
end
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
