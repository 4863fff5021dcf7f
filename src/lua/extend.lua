-- Extension on one master, all or nothing over the lock's keys.  Refused (0,
-- nothing touched) when any key holds another value.  Otherwise each key that
-- holds our value gets the new ttl (PEXPIRE), and each key that is gone (it
-- expired here, or the master lost it) is re-installed with our value and the
-- new ttl, as SET NX PX would: an acquisition of that key on this master,
-- which is safe while we hold the lock (docs/safety.md §8.3).  With fencing,
-- a re-installed key's counter is raised to the lock's token, as
-- fence_commit.lua does; and a key that a revoke (revoke.lua) took after our
-- token was granted is not re-installed but refused: its floor's "revoked"
-- member is above the token.
-- KEYS[1..n]: the lock's keys; with fencing, KEYS[n+1..2n]: their counters.
-- ARGV[1]: our value; ARGV[2]: new ttl in ms; ARGV[3], only with fencing: the
-- lock's token; ARGV[4], with it: the suffix that makes a counter's name its
-- floor's (src/proto/direct.h).
-- Returns 1 (extended), 2 (extended, some key re-installed: ROUND_REINSTALLED
-- in src/engine/round.h) or 0 (refused).
local n = #KEYS
if ARGV[3] then
  n = n / 2
end
local gone = {}
for i = 1, n do
  local value = redis.call("get", KEYS[i])
  if not value then
    if ARGV[3] then
      local revoked = redis.call("zscore", KEYS[n + i] .. ARGV[4], "revoked")
      if revoked and tonumber(revoked) > tonumber(ARGV[3]) then
        return 0
      end
    end
    gone[i] = true
  elseif value ~= ARGV[1] then
    return 0
  end
end
local result = 1
for i = 1, n do
  if gone[i] then
    redis.call("set", KEYS[i], ARGV[1], "PX", ARGV[2])
    if ARGV[3] then
      local counter = tonumber(redis.call("get", KEYS[n + i]) or "0") or 0
      if counter < tonumber(ARGV[3]) then
        redis.call("set", KEYS[n + i], ARGV[3])
      end
    end
    result = 2
  else
    redis.call("pexpire", KEYS[i], ARGV[2])
  end
end
return result
