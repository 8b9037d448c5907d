--[[
  Force-releases a hash lock (Redisson RLock and alike) only if the hash still holds the observed holder field;
  then wakes the lock's waiters the way Redisson's own unlock does, so they do not sleep until their timeouts.

  KEYS[1] lock key (a hash)
  ARGV[1] holder field as observed (for Redisson `<clientUUID>:<threadId>`)
  ARGV[2] channel to publish the unlock on, or "" for none (Redisson: redisson_lock__channel:{<name>})
  ARGV[3] message to publish (Redisson's UNLOCK_MESSAGE is 0)

  Output: 1 when deleted, 0 when the key is gone, not a hash, or no longer holds that field.
]]
if redis.call("TYPE", KEYS[1]).ok ~= "hash" then
  return 0
end
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call("DEL", KEYS[1])
if ARGV[2] ~= "" then
  redis.call("PUBLISH", ARGV[2], ARGV[3])
end
return 1
