-- Compare-and-delete: delete each key that still holds our value, and, for
-- the release of a held lock, announce it to waiters subscribed to the key's
-- release channel (not for the clean-up after a failed attempt: that lock was
-- never held, and waking waiters for it would only make them retry at once).
-- The channel prefix is a placeholder that CMake replaces with the value
-- include/redlock.h gives it, before the SHA1 is taken: one definition.
-- KEYS: the lock's keys; ARGV[1]: our value; ARGV[2]: "1" to announce.
-- Returns how many were deleted.
local deleted = 0
for _, key in ipairs(KEYS) do
  if redis.call("get", key) == ARGV[1] then
    redis.call("del", key)
    if ARGV[2] == "1" then
      redis.call("publish", "@REDLOCK_RELEASE_CHANNEL_PREFIX@" .. key, "")
    end
    deleted = deleted + 1
  end
end
return deleted
