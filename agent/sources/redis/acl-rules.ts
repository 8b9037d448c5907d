/**
 * The ACL rules of a least-privilege agent user (Redis 7 syntax), as the README gives them and the integration test
 * applies them to a real server: `ACL SETUSER lockscope on >PASSWORD <WATCH_ONLY_ACL>`, plus FORCE_RELEASE_ACL for
 * an agent that may force-release.
 *
 * Watch-only: read-only key access (`%R~*`), the one invalidation channel, and exactly the commands the agent
 * sends: ioredis's connection set-up (INFO ready check, CLIENT SETNAME, SELECT for a database other than 0), the
 * lock reads (TYPE, PTTL, STRLEN/GETRANGE, HLEN/HSCAN, ZCARD/ZRANGE, LLEN/LRANGE, SCARD/SSCAN), SCAN, PUBSUB NUMSUB
 * (Redisson waiters), CLIENT ID and CLIENT TRACKING with SUBSCRIBE (change detection), PING (keepalive), EXISTS
 * (replica checks; the sweep's check of a lock's companion keys), CONFIG GET (reading the notification setting; optional), CLUSTER NODES/INFO and READONLY
 * (cluster topology, replica reads), TIME (Redlock clock skew).
 */
export const WATCH_ONLY_ACL = [
  "resetkeys",
  "%R~*",
  "resetchannels",
  "&__redis__:invalidate",
  "-@all",
  "+ping",
  "+info",
  "+select",
  "+client|setname",
  "+client|id",
  "+client|tracking",
  "+subscribe",
  "+unsubscribe",
  "+scan",
  "+type",
  "+pttl",
  "+strlen",
  "+getrange",
  "+hlen",
  "+hscan",
  "+zcard",
  "+zrange",
  "+llen",
  "+lrange",
  "+scard",
  "+sscan",
  "+exists",
  "+pubsub|numsub",
  "+config|get",
  "+cluster|nodes",
  "+cluster|info",
  "+readonly",
  "+time",
].join(" ");

/**
 * What force-release adds: write access to keys, the Lua scripts (EVAL/EVALSHA; the commands they call are
 * checked too: GET, DEL, HEXISTS, TYPE, LREM, ZREM, ZSCORE, TIME) and PUBLISH of the unlock message Redisson waiters
 * wait for on `redisson_lock__channel:{name}`.
 */
export const FORCE_RELEASE_ACL = [
  "%RW~*",
  "&redisson_lock__channel:*",
  "+get",
  "+eval",
  "+evalsha",
  "+script|load",
  "+del",
  "+hexists",
  "+lrem",
  "+zrem",
  "+zscore",
  "+publish",
].join(" ");
