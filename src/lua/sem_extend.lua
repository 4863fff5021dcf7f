-- Extends a semaphore permit on one master: compare-and-pexpire of its slot,
-- and the limit key's TTL raised to at least the new ttl (re-created if it is
-- gone), so that it outlives the permit.  A limit key that disagrees is left
-- alone: the permit is ours either way.
-- KEYS[1]: the slot; KEYS[2]: the limit key.
-- ARGV[1]: our value; ARGV[2]: new ttl in ms; ARGV[3]: the limit.
-- Returns 1 when extended, 0 when the slot no longer holds our value.
if redis.call("get", KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call("pexpire", KEYS[1], ARGV[2])
local limit = redis.call("get", KEYS[2])
if not limit then
  redis.call("set", KEYS[2], ARGV[3], "PX", ARGV[2])
elseif limit == ARGV[3] and redis.call("pttl", KEYS[2]) < tonumber(ARGV[2]) then
  redis.call("pexpire", KEYS[2], ARGV[2])
end
return 1
