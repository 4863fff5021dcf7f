-- Compare-and-delete: delete each key that still holds our value, and, for
-- the release of a held lock, announce it to waiters subscribed to the key's
-- release channel (not for the clean-up after a failed attempt: that lock was
-- never held, and waking waiters for it would only make them retry at once).
-- A key's channel is PREFIX + tagged(key) (src/proto/keyname.h: tagged(K) is
-- K when it has a hash tag, else "{" .. K .. "}"), in the key's cluster slot.
-- It is named here rather than sent: this script runs on every master at
-- every release, and the names would make the command a third longer (bytes
-- each master reads).  The client says whether any key contains a '{' (flag
-- "3"/"4"), so that the usual key, which has none, costs a concatenation
-- and no search.  test_release_publish checks the channels it announces on
-- against the names the subscribers use.
-- KEYS: the lock's keys; ARGV[1]: our value; ARGV[2], last (a cluster voter
-- rewrites it, src/proto/scripts.h): "0" no announcement; "1" PUBLISH, "2"
-- SPUBLISH to the channel's shard (PUBLISH where the server has no SPUBLISH,
-- Redis < 7.0), no key containing a '{'; "3" and "4" the same when some
-- key does.  Returns how many were deleted.
local how = ARGV[2]
local shard = how == "2" or how == "4"
local look = how == "3" or how == "4"
local deleted = 0
for _, key in ipairs(KEYS) do
  if redis.call("get", key) == ARGV[1] then
    redis.call("del", key)
    if how ~= "0" then
      local channel = "@REDLOCK_RELEASE_CHANNEL_PREFIX@{" .. key .. "}"
      if look then
        -- A tag: a '{', then the first '}' after it, at least one byte on.
        local open = string.find(key, "{", 1, true)
        local close = open and string.find(key, "}", open + 1, true)
        if close and close > open + 1 then
          channel = "@REDLOCK_RELEASE_CHANNEL_PREFIX@" .. key
        end
      end
      if not shard or type(redis.pcall("spublish", channel, "")) == "table" then
        redis.call("publish", channel, "")
      end
    end
    deleted = deleted + 1
  end
end
return deleted
