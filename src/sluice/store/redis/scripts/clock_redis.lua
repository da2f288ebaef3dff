-- Time for this call: Redis's own clock, read once (DESIGN.md §2). Never the client's.
local now
do
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
