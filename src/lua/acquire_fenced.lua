-- Fenced acquisition on one master: all-or-nothing SET of the lock keys and,
-- when it succeeds, a fencing token = max(counter + 1, floor + 1, server TIME
-- in us), written to every key's counter.  A key's floor is the sorted set
-- that masters running no scripts raise instead of the counter
-- (src/proto/direct.h): read here too, so a master that got its Lua engine
-- back still gives tokens above those granted while it had none.
-- KEYS[1..n]: lock keys; KEYS[n+1..2n]: their fence counters; KEYS[2n+1..3n]:
-- their floors (member "token").
-- ARGV[1]: our value; ARGV[2]: ttl in ms.  Returns the token, or nil.
local n = #KEYS / 3
for i = 1, n do
  if redis.call("exists", KEYS[i]) == 1 then
    return false
  end
end
local now = redis.call("time")
local token = tonumber(now[1]) * 1000000 + tonumber(now[2])
for i = n + 1, 2 * n do
  local counter = tonumber(redis.call("get", KEYS[i]) or "0") or 0
  if counter + 1 > token then
    token = counter + 1
  end
  local floor = tonumber(redis.call("zscore", KEYS[n + i], "token") or "0") or 0
  if floor + 1 > token then
    token = floor + 1
  end
end
local text = string.format("%.0f", token)
for i = 1, n do
  redis.call("set", KEYS[i], ARGV[1], "PX", ARGV[2])
  redis.call("set", KEYS[n + i], text)
end
return token
