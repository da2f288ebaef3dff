-- show / lift a subject's penalty box (penalty.cc; evaluate.lua writes it). KEYS[1]: the
-- penalty key. ARGV: 'show' or 'lift', the penalty's within and quiet (µs, decimal).
-- Reply: blocked_until (0: never blocked), blocks (of the escalation, 0 once forgotten), strikes
-- within the window, now, as integers;
-- for a state as good as none (its last strike older than `within` and its block plus `quiet`
-- over, which its TTL also says): 0, 0, 0, now. 'lift' deletes the key after reading it.
local operation, within, quiet = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local blocked_until, blocks, strikes, last = 0, 0, 0, 0
local packed = redis.pcall('GET', KEYS[1])  -- a key of another type reads as no box
if type(packed) == 'string' and #packed >= 17 and (#packed - 17) % 8 == 0
    and string.byte(packed, 1) == 112 then  -- 'p'
  blocked_until, blocks = struct.unpack('<dd', packed, 2)
  for j = 18, #packed, 8 do
    local at = struct.unpack('<d', packed, j)
    if at > now - within then strikes = strikes + 1 end
    last = at
  end
end
local expires = last > 0 and last + within or 0
if blocked_until > 0 and blocked_until + quiet > expires then expires = blocked_until + quiet end
if expires <= now then blocked_until, blocks, strikes = 0, 0, 0 end
-- The escalation counts only while remembered (the last block ended less than `quiet` ago).
if blocked_until > 0 and now >= blocked_until + quiet then blocks = 0 end
if operation == 'lift' then redis.call('DEL', KEYS[1]) end
return {blocked_until, blocks, strikes, now}
