-- Time for this call: Redis's own clock, read once (DESIGN.md §2). Never the client's.
local now
do
  local t = redis.call('TIME')  -- seconds and microseconds, as strings: arithmetic converts them
  now = t[1] * 1000000 + t[2]
end
-- Every ARGV is part of the request (evaluate.lua: one per decision).
local requests = #ARGV
