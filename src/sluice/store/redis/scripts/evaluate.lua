-- acquire / inspect: decide for one or more subjects, each over all limits of its policy. The whole
-- call is atomic and its decisions apply in order: a later one sees what an earlier one wrote.
-- The store sends several decisions in one call when they wait at the same time (its decision
-- batches): each decision's own cost (script call, TIME, reading the request) is then shared.
--
-- ARGV[a] (a = 1 .. requests, set by clock_*.lua): a request, packed little-endian doubles:
--          repeats r, operation (OP_ACQUIRE, OP_INSPECT, or OP_PENALIZED_ACQUIRE: an acquire with
--          a penalty box), cost, limit count n, then kind and four parameters per limit
--          (common.lua); after them the lease id's bytes when the policy has a concurrency
--          limit; last, for OP_PENALIZED_ACQUIRE, the penalty (penalty.cc): after, within, block,
--          escalate, max, quiet (six doubles). It stands for r decisions in a row that send these
--          bytes: the store sends equal requests (one policy, no lease) once, so Redis reads and
--          unpacks them once (docs/redis-scripts.md).
-- KEYS:    the state keys of decision 1's n limits in order (then, for OP_PENALIZED_ACQUIRE, its
--          penalty key), then decision 2's, and so on.
-- Reply:   every decision's verdicts in order, concatenated, seven packed doubles each: allowed,
--          limit, remaining, retry_after, reset_after, delay, limit_index (from 0). acquire: the
--          deciding limit's; inspect: one per limit, in order, for the request's cost, exactly as
--          acquire decides each limit but written nowhere (cost 0: a peek; above: a dry run).
--          OP_PENALIZED_ACQUIRE adds an eighth double: blocked_until (-1: not blocked).
-- Penalty key: 'p', blocked_until, blocks ('<c1dd') then one '<d' per strike, oldest first.
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
  local repeats, operation, cost, count, first_kind, q1, q2, q3, q4, first_position =
    struct.unpack('<ddddddddd', request)
  for _ = 1, repeats do
    decision = decision + 1
    local kind, p1, p2, p3, p4, position = first_kind, q1, q2, q3, q4, first_position
    -- The lease id ends where the penalty's parameters start (string.sub's end index).
    local lease_end = -1

    -- The penalty box (penalty.cc penalize), read before the limits decide.
    local penalized = operation == OP_PENALIZED_ACQUIRE
    local pkey, p_after, p_within, p_block, p_escalate, p_max, p_quiet
    local blocked_until, blocks, strikes = 0, 0, nil
    if penalized then
      lease_end = -49
      p_after, p_within, p_block, p_escalate, p_max, p_quiet =
        struct.unpack('<dddddd', request, #request - 47)
      pkey = KEYS[first_key + count + 1]
      strikes = {}
      local packed = redis.pcall('GET', pkey)  -- a key of another type reads as no box
      if type(packed) == 'string' and #packed >= 17 and (#packed - 17) % 8 == 0
          and string.byte(packed, 1) == 112 then  -- 'p'
        blocked_until, blocks = struct.unpack('<dd', packed, 2)
        for j = 18, #packed, 8 do strikes[#strikes + 1] = struct.unpack('<d', packed, j) end
      end
    end

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
    local several = count > 1 or operation == OP_INSPECT
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

    if operation == OP_INSPECT then
      replies[decision] = table.concat(verdicts)
    else
      if several then
        allowed, limit, remaining, retry, reset, index =
          d_allowed, d_limit, d_remaining, d_retry, d_reset, d_index
        delay = allowed == 1 and longest_delay or NONE
      end
      local b_until = NONE
      if penalized then
        local block = now < blocked_until
        if not block and allowed == 0 and cost > 0 then
          -- A strike: those older than the window are forgotten; the after-th blocks at once.
          local kept = {}
          for _, at in ipairs(strikes) do
            if at > now - p_within then kept[#kept + 1] = at end
          end
          kept[#kept + 1] = now
          strikes = kept
          if #strikes >= p_after then
            local n = 0  -- the escalation continues while the last block ended < quiet ago
            if blocked_until > 0 and now < blocked_until + p_quiet then n = blocks end
            local duration, j = p_block, 0
            while j < n and duration < p_max do
              duration, j = duration * p_escalate, j + 1
            end
            if duration > p_max then duration = p_max end
            blocked_until, blocks, strikes = now + duration, math.min(n + 1, 64), {}
            block = true
          end
          local packed = {struct.pack('<c1dd', 'p', blocked_until, blocks)}
          local expires = 0
          if #strikes > 0 then
            packed[2] = struct.pack('<' .. string.rep('d', #strikes), unpack(strikes))
            expires = strikes[#strikes] + p_within
          end
          if blocked_until > 0 and blocked_until + p_quiet > expires then
            expires = blocked_until + p_quiet
          end
          local ms = (expires - now + (now - expires) % 1000) / 1000
          if ms < 1 then ms = 1 end
          redis.call('SET', pkey, table.concat(packed), 'PX', string.format('%d', ms))
        end
        if block then  -- penalty.cc deny_for_block
          local wait = blocked_until - now
          if allowed == 1 then
            retry = wait
          elseif retry ~= NONE and retry < wait then
            retry = wait
          end
          allowed, remaining, delay = 0, 0, NONE
          if reset < wait then reset = wait end
          b_until = blocked_until
        end
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
      if penalized then
        replies[decision] =
          struct.pack('<dddddddd', allowed, limit, remaining, retry, reset, delay, index, b_until)
      else
        replies[decision] =
          struct.pack('<ddddddd', allowed, limit, remaining, retry, reset, delay, index)
      end
    end
    first_key = first_key + count
    if penalized then first_key = first_key + 1 end
  end
end
return table.concat(replies)
