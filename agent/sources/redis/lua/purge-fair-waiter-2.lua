--[[
  Removes one dead waiter from a Redisson fair lock's queue, the way Redisson itself drops a waiter whose deadline
  passed (it does so only when another thread next tries the lock; until then everyone behind it waits longer).
  Refuses a waiter whose deadline has not passed by the server's own clock.

  KEYS[1] redisson_lock_queue:{<name>}   (list of `<clientUUID>:<threadId>`)
  KEYS[2] redisson_lock_timeout:{<name>} (zset: waiter -> deadline, epoch ms)
  ARGV[1] the waiter entry as observed

  Output: 1 removed; 0 not queued any more; -1 refused, its deadline has not passed.
]]
local score = redis.call('zscore', KEYS[2], ARGV[1])
if score then
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if tonumber(score) > now then
    return -1
  end
end
local removed = redis.call('lrem', KEYS[1], 0, ARGV[1])
redis.call('zrem', KEYS[2], ARGV[1])
if removed > 0 then
  return 1
end
return 0
