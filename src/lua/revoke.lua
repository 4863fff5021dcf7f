-- An administrator's revoke of a lock or an election on one master
-- (src/engine/revoke.c).  KEYS[1]: the lock key; KEYS[2]: its fence counter;
-- KEYS[3]: its floor (src/proto/direct.h).
-- ARGV[1]: the fence to raise the counter to, or "0" (no fencing on the key).
-- ARGV[2]: a value of the revoker's own.
-- Fenced: the counter is raised to the fence (never lowered), the floor's
-- "revoked" member too, and the key deleted; the holder's extension, which
-- re-installs a key that is gone, refuses to where "revoked" is above its
-- token (extend.lua).  Not
-- fenced: the key keeps its remaining ttl but takes the revoker's value, so
-- that the holder's extension is refused and nobody is granted the lock
-- before the holder's lease would have ended.
-- Returns the counter after (fenced), or 1.
local fence = tonumber(ARGV[1])
if fence > 0 then
  local c = tonumber(redis.call("get", KEYS[2]) or "0") or 0
  if c < fence then
    redis.call("set", KEYS[2], ARGV[1])
    c = fence
  end
  local revoked = tonumber(redis.call("zscore", KEYS[3], "revoked") or "0") or 0
  if revoked < fence then
    redis.call("zadd", KEYS[3], ARGV[1], "revoked")
  end
  redis.call("del", KEYS[1])
  return c
end
local ttl = redis.call("pttl", KEYS[1])
if ttl > 0 then
  redis.call("set", KEYS[1], ARGV[2], "PX", ttl)
end
return 1
