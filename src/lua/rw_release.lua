-- Releases a read-write lock hold on one master (writer key by
-- compare-and-delete, or reader member), and a writer's intent when ARGV[2]
-- names it; announces on the lock's release channel when anything waiters
-- care about went (not for the clean-up after a failed attempt).
-- KEYS[1]: writer key; KEYS[2]: readers set; KEYS[3]: writer intent.
-- ARGV[1]: our value; ARGV[2]: our intent value or ""; ARGV[3]: the channel;
-- ARGV[4], last (a cluster voter rewrites it, src/proto/scripts.h): "0" no
-- announcement, "1" PUBLISH, "2" SPUBLISH to the channel's shard (PUBLISH
-- where the server has no SPUBLISH).
-- Returns 1 when an unexpired hold of ours was released, else 0.
local released = 0
local changed = 0
if redis.call("get", KEYS[1]) == ARGV[1] then
  redis.call("del", KEYS[1])
  released = 1
else
  local score = redis.call("zscore", KEYS[2], ARGV[1])
  if score then
    redis.call("zrem", KEYS[2], ARGV[1])
    local t = redis.call("time")
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    if tonumber(score) >= now then
      released = 1
    end
  end
end
if released == 1 then
  changed = 1
end
if ARGV[2] ~= "" and redis.call("get", KEYS[3]) == ARGV[2] then
  redis.call("del", KEYS[3])
  changed = 1
end
if changed == 1 and ARGV[4] ~= "0" then
  local sent = ARGV[4] == "2" and redis.pcall("spublish", ARGV[3], "")
  if not sent or type(sent) == "table" then
    redis.call("publish", ARGV[3], "")
  end
end
return released
