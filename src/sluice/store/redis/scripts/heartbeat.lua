-- heartbeat: one sluice node says it is alive and reads how many are (docs/defences.md,
-- "Budget-preserving outage mode"). Preceded by clock_redis.lua (or clock_pinned.lua in tests),
-- which sets `now` in µs.
-- KEYS[1]: the live-nodes sorted set: node id -> the instant its heartbeat expires (µs).
-- ARGV[1]: 'beat' or 'leave'. ARGV[2]: the node id. ARGV[3]: beat: the heartbeat's TTL in µs.
-- Reply:   the number of live nodes after the call (this one included after a beat).
-- Entries past their expiry are dropped on every call, by Redis's clock, so no SCAN and no key
-- per node; the set itself expires when no node beats for a whole TTL.
local nodes = KEYS[1]
if ARGV[1] == 'beat' then
  local ttl = tonumber(ARGV[3])
  redis.call('ZADD', nodes, string.format('%d', now + ttl), ARGV[2])
  local ms = math.floor((ttl + 999) / 1000)
  if redis.call('PTTL', nodes) < ms then redis.call('PEXPIRE', nodes, ms) end
else
  redis.call('ZREM', nodes, ARGV[2])
end
redis.call('ZREMRANGEBYSCORE', nodes, '-inf', string.format('%d', now))
return redis.call('ZCARD', nodes)
