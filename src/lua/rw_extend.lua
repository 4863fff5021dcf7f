-- Extends a read-write lock hold on one master: a writer's key by
-- compare-and-pexpire, a reader's member (if present and unexpired) by a new
-- score, the set's expiry following its latest member.  A hold that is gone
-- here (expired, or lost by the master) is re-installed when the acquisition
-- script of its kind would admit it now (docs/safety.md §8.3, §11.2): a
-- writer's key when there is no writer key and no unexpired reader, a
-- reader's member when there is no writer key.  The writer intent is not
-- looked at: a re-install is not a new hold, and the intent only holds back
-- new ones.  With fencing, a re-install raises the counter to the hold's
-- token, as rw_fence_commit.lua does.
-- KEYS[1]: writer key; KEYS[2]: readers set; KEYS[3], only with fencing: the
-- lock's fence counter.
-- ARGV[1]: our value; ARGV[2]: new ttl in ms; ARGV[3]: "w" (write hold) or
-- "r" (read hold); ARGV[4], only with fencing: the hold's token.
-- Returns 1 (extended), 2 (extended, the hold re-installed: ROUND_REINSTALLED
-- in src/engine/round.h) or 0 (refused: another writer, or readers for a writer).
local t = redis.call("time")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local writer = redis.call("get", KEYS[1])
local function raise_counter()
  if #KEYS == 3 then
    local counter = tonumber(redis.call("get", KEYS[3]) or "0") or 0
    if counter < tonumber(ARGV[4]) then
      redis.call("set", KEYS[3], ARGV[4])
    end
  end
end
local function follow_latest_reader()
  local last = redis.call("zrange", KEYS[2], -1, -1, "withscores")
  redis.call("pexpireat", KEYS[2], string.format("%.0f", tonumber(last[2])))
end
if ARGV[3] == "w" then
  if writer == ARGV[1] then
    redis.call("pexpire", KEYS[1], ARGV[2])
    return 1
  end
  if writer then
    return 0
  end
  -- Expired readers (score < now, as Redis expires keys) go first, as in
  -- rw_write.lua.
  redis.call("zremrangebyscore", KEYS[2], "-inf", "(" .. string.format("%.0f", now))
  if redis.call("zcard", KEYS[2]) > 0 then
    return 0
  end
  redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2])
  raise_counter()
  return 2
end
local expiry = string.format("%.0f", now + tonumber(ARGV[2]))
local score = redis.call("zscore", KEYS[2], ARGV[1])
if score and tonumber(score) >= now then
  redis.call("zadd", KEYS[2], "XX", expiry, ARGV[1])
  follow_latest_reader()
  return 1
end
-- Gone or expired here: another writer may have been admitted since, and then
-- its key is here (or it was released, and nothing stands in the way).
if writer then
  return 0
end
redis.call("zremrangebyscore", KEYS[2], "-inf", "(" .. string.format("%.0f", now))
redis.call("zadd", KEYS[2], expiry, ARGV[1])
follow_latest_reader()
raise_counter()
return 2
