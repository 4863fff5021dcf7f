-- Compare-and-delete: delete each key that still holds our value, and, for
-- the release of a held lock, announce it to waiters subscribed to the key's
-- release channel (not for the clean-up after a failed attempt: that lock was
-- never held, and waking waiters for it would only make them retry at once).
-- The channels come from the client (src/proto/keyname.h names them in each key's
-- hash slot), so the rule that names them is written once.
-- KEYS: the lock's keys; ARGV[1]: our value; ARGV[2]: "1" to announce, then
-- ARGV[2 + i]: KEYS[i]'s release channel.
-- Returns how many were deleted.
local deleted = 0
for i, key in ipairs(KEYS) do
  if redis.call("get", key) == ARGV[1] then
    redis.call("del", key)
    if ARGV[2] == "1" then
      redis.call("publish", ARGV[2 + i], "")
    end
    deleted = deleted + 1
  end
end
return deleted
