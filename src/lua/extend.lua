-- Compare-and-pexpire: extend every key only if every key still holds our value.
-- KEYS: the lock's keys; ARGV[1]: our value; ARGV[2]: new ttl in ms.
-- Returns the number of keys extended (0 when any key is no longer ours).
for _, key in ipairs(KEYS) do
  if redis.call("get", key) ~= ARGV[1] then
    return 0
  end
end
for _, key in ipairs(KEYS) do
  redis.call("pexpire", key, ARGV[2])
end
return #KEYS
