-- Semaphore permit on one master (src/engine/prims.c): one slot of the semaphore,
-- taken like a lock (SET NX PX), provided every client agrees on the limit.
-- KEYS[1]: the slot; KEYS[2]: the semaphore's limit key; KEYS[3], only when
-- fencing: the slot's fence counter.
-- ARGV[1]: our value; ARGV[2]: ttl in ms; ARGV[3]: the limit.
-- Returns 1 (fenced: the token, as acquire_fenced.lua) when the slot is ours,
-- 0 when it is held, and -L (nothing changed) when the limit key says that
-- the semaphore's limit is L, not ours (PRIM_SEM_MISMATCH in src/engine/prims.h).
local limit = redis.call("get", KEYS[2])
if limit and limit ~= ARGV[3] then
  local other = tonumber(limit) or 1
  if other < 1 then
    other = 1
  end
  return -other
end
if redis.call("exists", KEYS[1]) == 1 then
  return 0
end
local result = 1
if #KEYS == 3 then
  local now = redis.call("time")
  local token = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local counter = tonumber(redis.call("get", KEYS[3]) or "0") or 0
  if counter + 1 > token then
    token = counter + 1
  end
  redis.call("set", KEYS[3], string.format("%.0f", token))
  result = token
end
redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2])
-- The limit key outlives every permit on this master: its TTL is raised to
-- the longest permit ttl (sem_extend.lua does the same).
if not limit then
  redis.call("set", KEYS[2], ARGV[3], "PX", ARGV[2])
elseif redis.call("pttl", KEYS[2]) < tonumber(ARGV[2]) then
  redis.call("pexpire", KEYS[2], ARGV[2])
end
return result
