-- inspect: every limit's verdict for a cost-0 peek, in limit order; writes nothing.
-- KEYS and ARGV as for acquire (cost and lease ignored). Replies a flat list of seven values
-- per limit, as acquire does for one.
local reply = {}
for i = 1, #KEYS do
  local p = read_limit(3 + (i - 1) * 5)
  local algorithm = algorithms[p.kind]
  local v = algorithm.decide(p, algorithm.load(p, KEYS[i]), 0, KEYS[i])
  for _, value in ipairs(verdict_reply(v, i - 1)) do reply[#reply + 1] = value end
end
return reply
