-- TEST BUILDS ONLY: time pinned by the caller in the last ARGV, so conformance traces replay
-- deterministically. The production store never loads this variant.
local now = tonumber(ARGV[#ARGV])
