--[[
  Releases a string lock only if it still holds the exact value the operator saw (the textbook safe release).
  A blind DEL would free a lock that another client acquired after ours expired. The value is compared by its SHA-1,
  so the agent never has to send (or even read) a long value, and a value that shares a long prefix with the one
  seen is never mistaken for it.

  KEYS[1] lock key
  ARGV[1] SHA-1 (40 lowercase hex) of the exact value observed (Lock.ownerFingerprint without "sha1:")
  ARGV[2] largest value, in bytes, this script hashes (bounds the server time one call can take)

  Output: 1 when deleted; 0 when the key is gone, not a string, or holds another value; -1 when the value is longer
  than ARGV[2] (nothing deleted).
]]
if redis.call("TYPE", KEYS[1]).ok ~= "string" then
  return 0
end
if redis.call("STRLEN", KEYS[1]) > tonumber(ARGV[2]) then
  return -1
end
if redis.sha1hex(redis.call("GET", KEYS[1])) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
