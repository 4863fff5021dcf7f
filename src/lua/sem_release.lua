-- Releases a semaphore permit on one master: compare-and-delete of its slot
-- and, for a held permit, an announcement on the semaphore's release channel
-- (one channel for all its slots: a waiter wants whichever slot frees up).
-- The message is the permit's value: every master announces the same
-- release, and subscribers tell releases apart by it, to wake one waiter per
-- release (the value is worthless once deleted).  The limit key stays until
-- its TTL runs out.
-- KEYS[1]: the slot.  ARGV[1]: our value; ARGV[2]: the channel; ARGV[3],
-- last (a cluster voter rewrites it, src/proto/scripts.h): "0" no
-- announcement, "1" PUBLISH, "2" SPUBLISH to the channel's shard (PUBLISH
-- where the server has no SPUBLISH).  Returns 1 when deleted, else 0.
if redis.call("get", KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call("del", KEYS[1])
if ARGV[3] ~= "0" then
  local sent = ARGV[3] == "2" and redis.pcall("spublish", ARGV[2], ARGV[1])
  if not sent or type(sent) == "table" then
    redis.call("publish", ARGV[2], ARGV[1])
  end
end
return 1
