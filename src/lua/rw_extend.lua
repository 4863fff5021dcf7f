-- Extends a read-write lock hold on one master: a writer's key by
-- compare-and-pexpire, a reader's member (if present and unexpired) by a new
-- score, the set's expiry following its latest member.
-- KEYS[1]: writer key; KEYS[2]: readers set.
-- ARGV[1]: our value; ARGV[2]: new ttl in ms.
-- Returns 1 when extended, 0 when the hold is no longer ours.
if redis.call("get", KEYS[1]) == ARGV[1] then
  redis.call("pexpire", KEYS[1], ARGV[2])
  return 1
end
local score = redis.call("zscore", KEYS[2], ARGV[1])
if not score then
  return 0
end
local t = redis.call("time")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(score) < now then
  return 0 -- expired: another writer may have been admitted since
end
redis.call("zadd", KEYS[2], "XX", string.format("%.0f", now + tonumber(ARGV[2])), ARGV[1])
local last = redis.call("zrange", KEYS[2], -1, -1, "withscores")
redis.call("pexpireat", KEYS[2], string.format("%.0f", tonumber(last[2])))
return 1
