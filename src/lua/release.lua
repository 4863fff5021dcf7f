-- Compare-and-delete: delete each key that still holds our value, and, for
-- the release of a held lock, announce it to waiters subscribed to the key's
-- release channel (not for the clean-up after a failed attempt: that lock was
-- never held, and waking waiters for it would only make them retry at once).
-- The channels come from the client (src/proto/keyname.h names them in each key's
-- hash slot), so the rule that names them is written once.
-- KEYS: the lock's keys; ARGV[1]: our value; when announcing, ARGV[1 + i]:
-- KEYS[i]'s release channel.  ARGV[#ARGV], last (a cluster voter rewrites it,
-- src/proto/scripts.h): "0" no announcement, "1" PUBLISH, "2" SPUBLISH to the
-- channel's shard (PUBLISH where the server has no SPUBLISH, Redis < 7.0).
-- Returns how many were deleted.
local how = ARGV[#ARGV]
local deleted = 0
for i, key in ipairs(KEYS) do
  if redis.call("get", key) == ARGV[1] then
    redis.call("del", key)
    if how ~= "0" then
      local sent = how == "2" and redis.pcall("spublish", ARGV[1 + i], "")
      if not sent or type(sent) == "table" then
        redis.call("publish", ARGV[1 + i], "")
      end
    end
    deleted = deleted + 1
  end
end
return deleted
