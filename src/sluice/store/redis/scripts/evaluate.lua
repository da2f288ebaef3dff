-- acquire / inspect: decide for one or more subjects, each over all limits of its policy. The whole
-- call is atomic and its decisions apply in order: a later one sees what an earlier one wrote.
-- The store sends several decisions in one call when they wait at the same time (its decision
-- batches): each decision's own cost (script call, TIME, reading the request) is then shared.
--
-- ARGV[a] (a = 1 .. requests, set by clock_*.lua): a request, packed little-endian doubles:
--          repeats r, operation (0 acquire, 1 inspect), cost, limit count n, then kind and four
--          parameters per limit (common.lua); after them the lease id's bytes when the policy
--          has a concurrency limit. It stands for r decisions in a row that send these bytes:
--          the store sends equal requests (one policy, no lease) once, so Redis reads and unpacks
--          them once (docs/redis-scripts.md).
-- KEYS:    the state keys of decision 1's n limits in order, then decision 2's, and so on.
-- Reply:   every decision's verdicts in order, concatenated, seven packed doubles each: allowed,
--          limit, remaining, retry_after, reset_after, delay, limit_index (from 0). acquire: the
--          deciding limit's; inspect: one per limit, in order, for the request's cost, exactly as
--          acquire decides each limit but written nowhere (cost 0: a peek; above: a dry run).
-- acquire writes only when every limit allows and cost > 0, and every key it writes has a TTL.
local replies = {}
-- A TTL's decimal text by its whole ms, per call: the decisions of one window in a batch expire
-- together, and a table lookup costs a fraction of string.format (-2 % instructions per
-- fixed_window decision at batches of 5; docs/redis-scripts.md).
local ttl_texts = {}
local first_key = 0  -- KEYS before this decision's
local decision = 0  -- decisions so far
for a = 1, requests do
  local request = ARGV[a]
  local repeats, inspecting, cost, count, first_kind, q1, q2, q3, q4, first_position =
    struct.unpack('<ddddddddd', request)
  for _ = 1, repeats do
    decision = decision + 1
    local kind, p1, p2, p3, p4, position = first_kind, q1, q2, q3, q4, first_position

    -- The verdict of the limit being decided, set by its kind's block; after the loop, the
    -- policy's verdict.
    local allowed, limit, remaining, retry, reset, delay
    local index = 0
    -- What admitting the request writes for that limit: `value`, SET with a TTL of `ttl` µs
    -- (rounded up to whole ms; nil: the key keeps its TTL), or for the kinds that keep a sorted
    -- set or a hash, `commit()` and then the TTL.
    local value, ttl, commit

    -- Only with several limits (or for inspect): every limit's writes, which wait until all have
    -- allowed; the deciding verdict so far (evaluate.cc: the first limit's, replaced by any tighter
    -- one); the longest delay; inspect's verdicts. One limit needs none of it.
    local several = count > 1 or inspecting == 1
    local values, ttls, commits, verdicts
    local d_allowed, d_limit, d_remaining, d_retry, d_reset, d_index
    local longest_delay = NONE
    if several then values, ttls, commits, verdicts = {}, {}, {}, {} end

    for i = 1, count do
      if i > 1 then kind, p1, p2, p3, p4, position = struct.unpack('<ddddd', request, position) end
      local key = KEYS[first_key + i]
      allowed, limit, remaining, retry, reset, delay = 0, 0, 0, NONE, 0, NONE
      value, ttl, commit = nil, nil, nil

      -- @algorithms: one block per kind (token_bucket.lua ... concurrency.lua), spliced in here.

      if several then
        verdicts[i] = struct.pack('<ddddddd', allowed, limit, remaining, retry, reset, delay, i - 1)
        values[i], ttls[i], commits[i] = value, ttl, commit
        if delay > longest_delay then longest_delay = delay end
        local tighter = i == 1
        if not tighter then  -- evaluate.cc is_tighter
          if allowed ~= d_allowed then
            tighter = allowed == 0
          elseif allowed == 1 then
            tighter = remaining < d_remaining
          elseif d_retry ~= NONE then  -- a limit that can never grant the cost stays the decider
            tighter = retry == NONE or retry > d_retry
          end
        end
        if tighter then
          d_allowed, d_limit, d_remaining, d_retry, d_reset, d_index =
            allowed, limit, remaining, retry, reset, i - 1
        end
      end
    end

    if inspecting == 1 then
      replies[decision] = table.concat(verdicts)
    else
      if several then
        allowed, limit, remaining, retry, reset, index =
          d_allowed, d_limit, d_remaining, d_retry, d_reset, d_index
        delay = allowed == 1 and longest_delay or NONE
      end
      if allowed == 1 and cost > 0 then
        for i = 1, count do
          if several then value, ttl, commit = values[i], ttls[i], commits[i] end
          if ttl == nil then  -- the key's TTL already runs to the state's end (fixed_window.lua)
            redis.call('SET', KEYS[first_key + i], value, 'KEEPTTL')
          else
            local ms = (ttl + (-ttl) % 1000) / 1000  -- whole ms, rounded up, at least 1
            if ms < 1 then ms = 1 end
            local text = ttl_texts[ms]
            if text == nil then
              text = string.format('%d', ms)
              ttl_texts[ms] = text
            end
            if commit then
              commit()
              redis.call('PEXPIRE', KEYS[first_key + i], text)
            else
              redis.call('SET', KEYS[first_key + i], value, 'PX', text)
            end
          end
        end
      end
      replies[decision] =
        struct.pack('<ddddddd', allowed, limit, remaining, retry, reset, delay, index)
    end
    first_key = first_key + count
  end
end
return table.concat(replies)
