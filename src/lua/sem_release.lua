-- Releases a semaphore permit on one master: compare-and-delete of its slot
-- and, for a held permit, an announcement on the semaphore's release channel
-- (one channel for all its slots: a waiter wants whichever slot frees up).
-- The message is the permit's value: every master announces the same
-- release, and subscribers tell releases apart by it, to wake one waiter per
-- release (the value is worthless once deleted).  The limit key stays until
-- its TTL runs out.
-- KEYS[1]: the slot.  ARGV[1]: our value; ARGV[2]: "1" to announce;
-- ARGV[3]: the channel.  Returns 1 when deleted, else 0.
if redis.call("get", KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call("del", KEYS[1])
if ARGV[2] == "1" then
  redis.call("publish", ARGV[3], ARGV[1])
end
return 1
