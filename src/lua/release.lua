-- Compare-and-delete: delete each key that still holds our value.
-- KEYS: the lock's keys; ARGV[1]: our value.  Returns how many were deleted.
local deleted = 0
for _, key in ipairs(KEYS) do
  if redis.call("get", key) == ARGV[1] then
    redis.call("del", key)
    deleted = deleted + 1
  end
end
return deleted
