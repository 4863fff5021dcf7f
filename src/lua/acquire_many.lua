-- All-or-nothing SET NX PX over several keys on one master.
-- KEYS: the keys; ARGV[1]: our value; ARGV[2]: ttl in ms.
-- Returns the number of keys set: #KEYS, or 0 when any key already exists.
for _, key in ipairs(KEYS) do
  if redis.call("exists", key) == 1 then
    return 0
  end
end
for _, key in ipairs(KEYS) do
  redis.call("set", key, ARGV[1], "PX", ARGV[2])
end
return #KEYS
