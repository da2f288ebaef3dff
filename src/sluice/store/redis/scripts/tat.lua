-- ---- TAT arithmetic (tat.h) ----

local function tat_not_before(s)
  if s.tat >= now then return s end
  return {tat = now, frac = 0}
end

local function tat_advance(s, n, rate, period)
  local total = s.frac + n * period
  local q = fdiv(total, rate)
  return {tat = s.tat + q, frac = total - q * rate}
end

local function tat_ahead(s, rate) return (s.tat - now) * rate + s.frac end

local function tat_ceil(s)
  if s.frac > 0 then return s.tat + 1 end
  return s.tat
end

local function tat_encode(s)
  if s.frac == 0 then return int(s.tat) end
  return int(s.tat) .. ':' .. int(s.frac)
end

local function read_tat(key)
  local value = read_string(key)
  if value == nil or not string.find(value, '^%d') then return nil end
  local n = numbers(value)
  return {tat = n[1], frac = n[2] or 0}
end

