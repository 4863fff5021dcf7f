-- Fencing write-back: raise every counter to the granted token (raising is
-- always safe), and acknowledge only if every lock key still holds our value.
-- KEYS[1..n]: lock keys; KEYS[n+1..2n]: their fence counters.
-- ARGV[1]: our value; ARGV[2]: the token.  Returns 1 (acknowledged) or 0.
local n = #KEYS / 2
local token = tonumber(ARGV[2])
for i = n + 1, 2 * n do
  local counter = tonumber(redis.call("get", KEYS[i]) or "0") or 0
  if counter < token then
    redis.call("set", KEYS[i], ARGV[2])
  end
end
for i = 1, n do
  if redis.call("get", KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
return 1
