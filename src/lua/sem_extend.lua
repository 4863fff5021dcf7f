-- Extends a semaphore permit on one master: compare-and-pexpire of its slot,
-- or, when the slot is gone (it expired here, or the master lost it), its
-- re-installation with our value and the new ttl, as sem_acquire.lua would
-- take it: only if the limit key agrees or is absent (docs/safety.md §8.3,
-- §11.1).  The limit key's TTL is raised to at least the new ttl (re-created
-- if it is gone), so that it outlives the permit; a limit key that disagrees
-- is left alone: a permit whose slot still holds our value is ours either way.
-- With fencing, a re-installed slot's counter is raised to the permit's token.
-- KEYS[1]: the slot; KEYS[2]: the limit key; KEYS[3], only with fencing: the
-- slot's fence counter.
-- ARGV[1]: our value; ARGV[2]: new ttl in ms; ARGV[3]: the limit; ARGV[4],
-- only with fencing: the permit's token.
-- Returns 1 (extended), 2 (extended, the slot re-installed: ROUND_REINSTALLED
-- in src/engine/round.h) or 0 (the slot holds another value, or it is gone and the
-- limit key disagrees).
local slot = redis.call("get", KEYS[1])
local limit = redis.call("get", KEYS[2])
local result = 1
if not slot then
  if limit and limit ~= ARGV[3] then
    return 0
  end
  redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2])
  if #KEYS == 3 then
    local counter = tonumber(redis.call("get", KEYS[3]) or "0") or 0
    if counter < tonumber(ARGV[4]) then
      redis.call("set", KEYS[3], ARGV[4])
    end
  end
  result = 2
elseif slot ~= ARGV[1] then
  return 0
else
  redis.call("pexpire", KEYS[1], ARGV[2])
end
if not limit then
  redis.call("set", KEYS[2], ARGV[3], "PX", ARGV[2])
elseif limit == ARGV[3] and redis.call("pttl", KEYS[2]) < tonumber(ARGV[2]) then
  redis.call("pexpire", KEYS[2], ARGV[2])
end
return result
