-- Compare-and-delete: delete each key that still holds our value, and
-- announce the release to waiters subscribed to the key's release channel.
-- KEYS: the lock's keys; ARGV[1]: our value.  Returns how many were deleted.
local deleted = 0
for _, key in ipairs(KEYS) do
  if redis.call("get", key) == ARGV[1] then
    redis.call("del", key)
    redis.call("publish", "__redlock_release__:" .. key, "")
    deleted = deleted + 1
  end
end
return deleted
