-- Fencing write-back of a read-write lock hold (as fence_commit.lua): raise
-- the counter to the granted token, and acknowledge only if the hold is
-- still ours here (writer key, or an unexpired reader member).
-- KEYS[1]: writer key; KEYS[2]: readers set; KEYS[3]: fence counter.
-- ARGV[1]: our value; ARGV[2]: the token.  Returns 1 (acknowledged) or 0.
local counter = tonumber(redis.call("get", KEYS[3]) or "0") or 0
if counter < tonumber(ARGV[2]) then
  redis.call("set", KEYS[3], ARGV[2])
end
if redis.call("get", KEYS[1]) == ARGV[1] then
  return 1
end
local score = redis.call("zscore", KEYS[2], ARGV[1])
if not score then
  return 0
end
local t = redis.call("time")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(score) < now then
  return 0
end
return 1
