--[[
  Read-only: the SHA-1 of a string lock's whole value, for values longer than the prefix the agent reads. Lets the
  agent tell two holders apart whose values share that prefix, without transferring the value.

  KEYS[1] lock key
  ARGV[1] largest value, in bytes, this script hashes (bounds the server time one call can take)

  Output: 40 lowercase hex; false (nil) when the key is not a string or its value is longer than ARGV[1].
]]
if redis.call("TYPE", KEYS[1]).ok ~= "string" then
  return false
end
if redis.call("STRLEN", KEYS[1]) > tonumber(ARGV[1]) then
  return false
end
return redis.sha1hex(redis.call("GET", KEYS[1]))
