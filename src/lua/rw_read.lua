-- Read hold of a read-write lock on one master (src/engine/prims.c).  Refused while
-- a writer holds it or a writer waits (its intent key), so that a stream of
-- readers cannot starve a writer.  Readers are members of a sorted set whose
-- scores are their expiries in this master's milliseconds (TIME); the set's
-- own expiry is its latest member's.
-- KEYS[1]: writer key; KEYS[2]: readers set; KEYS[3]: writer intent;
-- KEYS[4], only when fencing: the lock's fence counter.
-- ARGV[1]: our value; ARGV[2]: ttl in ms.
-- Returns 1 (fenced: the token) when the hold is ours, 0 when a writer holds
-- it, -1 when a writer waits (PRIM_RW_* codes in src/engine/prims.h).
if redis.call("exists", KEYS[1]) == 1 then
  return 0
end
if redis.call("exists", KEYS[3]) == 1 then
  return -1
end
local t = redis.call("time")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Expired readers (score < now, as Redis expires keys) go first.
redis.call("zremrangebyscore", KEYS[2], "-inf", "(" .. string.format("%.0f", now))
redis.call("zadd", KEYS[2], string.format("%.0f", now + tonumber(ARGV[2])), ARGV[1])
local last = redis.call("zrange", KEYS[2], -1, -1, "withscores")
redis.call("pexpireat", KEYS[2], string.format("%.0f", tonumber(last[2])))
if #KEYS == 4 then
  -- A reader's token is the write epoch: the counter as the last writer left
  -- it (not raised), created from TIME in us when absent (docs/safety.md).
  local token = tonumber(redis.call("get", KEYS[4]) or "")
  if not token then
    token = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call("set", KEYS[4], string.format("%.0f", token))
  end
  return token
end
return 1
