--[[
  Releases a lock only if it still holds the caller's token (the textbook safe release).
  A blind DEL would free a lock that another client acquired after ours expired.

  KEYS[1] lock key
  ARGV[1] expected token (the exact value observed)

  Output: 1 when deleted, 0 when the key is gone or holds another token.
]]
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
