-- Read-only view of one resource on one master, for redlock_inspect
-- (src/engine/inspect.c): what each kind stores, and its fence counter.
-- ARGV[1]: the kind: "l" a lock or an election (KEYS[1] the key, KEYS[2] its
-- counter, KEYS[3] its floor: src/proto/direct.h); "s" a semaphore (KEYS[1] its limit key, KEYS[2] a slot key
-- without its number, ARGV[2] the counter prefix of a slot key); "r" a
-- read-write lock (KEYS[1] the writer key, KEYS[2] its counter, KEYS[3] the
-- readers set, whose scores are expiries in this master's milliseconds).
-- Returns {counter or false, limit or false, then per hold: its tag (a
-- lock's "", a slot's number, "w" the writer, "r" a reader), its value and
-- its ttl in ms}.  The counter: the largest of the kind's (a semaphore:
-- over its slots).
local out = {false, false}
local function hold(tag, key)
  local value = redis.call("get", key)
  if value then
    out[#out + 1] = tag
    out[#out + 1] = value
    out[#out + 1] = redis.call("pttl", key)
  end
end
local function counter(key)
  local c = tonumber(redis.call("get", key) or "")
  if c and (not out[1] or c > tonumber(out[1])) then
    out[1] = string.format("%.0f", c)
  end
end
if ARGV[1] == "l" then
  hold("", KEYS[1])
  counter(KEYS[2])
  local floor = tonumber(redis.call("zscore", KEYS[3], "token") or "")
  if floor and (not out[1] or floor > tonumber(out[1])) then
    out[1] = string.format("%.0f", floor)
  end
elseif ARGV[1] == "s" then
  local limit = tonumber(redis.call("get", KEYS[1]) or "")
  if limit then
    out[2] = limit
    for i = 0, limit - 1 do
      hold(tostring(i), KEYS[2] .. i)
      counter(ARGV[2] .. KEYS[2] .. i)
    end
  end
else
  hold("w", KEYS[1])
  counter(KEYS[2])
  local t = redis.call("time")
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local readers = redis.call("zrange", KEYS[3], 0, -1, "withscores")
  for i = 1, #readers, 2 do
    local left = tonumber(readers[i + 1]) - now
    if left > 0 then
      out[#out + 1] = "r"
      out[#out + 1] = readers[i]
      out[#out + 1] = left
    end
  end
end
return out
