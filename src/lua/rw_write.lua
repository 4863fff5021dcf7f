-- Write hold of a read-write lock on one master (src/engine/prims.c).  Refused while
-- another writer holds it, or while unexpired readers remain: then the
-- writer's intent (its own short lease) is set, unless another writer's
-- intent is there, and new readers are refused until it goes.
-- KEYS[1]: writer key; KEYS[2]: readers set; KEYS[3]: writer intent;
-- KEYS[4], only when fencing: the lock's fence counter.
-- ARGV[1]: our value; ARGV[2]: ttl in ms; ARGV[3]: the call's intent value;
-- ARGV[4]: intent ttl in ms ("0": set no intent, a one-shot attempt).
-- Returns 1 (fenced: the token, as acquire_fenced.lua) when the hold is ours,
-- 0 when a writer holds it, -1 when readers do (PRIM_RW_* in src/engine/prims.h).
if redis.call("exists", KEYS[1]) == 1 then
  return 0
end
local t = redis.call("time")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call("zremrangebyscore", KEYS[2], "-inf", "(" .. string.format("%.0f", now))
if redis.call("zcard", KEYS[2]) > 0 then
  if ARGV[4] ~= "0" then
    local intent = redis.call("get", KEYS[3])
    if not intent or intent == ARGV[3] then
      redis.call("set", KEYS[3], ARGV[3], "PX", ARGV[4])
    end
  end
  return -1
end
redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2])
if redis.call("get", KEYS[3]) == ARGV[3] then
  redis.call("del", KEYS[3])
end
if #KEYS == 4 then
  local token = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local counter = tonumber(redis.call("get", KEYS[4]) or "0") or 0
  if counter + 1 > token then
    token = counter + 1
  end
  redis.call("set", KEYS[4], string.format("%.0f", token))
  return token
end
return 1
