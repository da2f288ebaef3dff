-- TEST BUILDS ONLY: time pinned by the caller in the last ARGV, so conformance traces replay
-- deterministically. The production store never loads this variant.
local now = tonumber(ARGV[#ARGV])
-- The ARGV before the pinned time are the request (evaluate.lua: one per decision).
local requests = #ARGV - 1
