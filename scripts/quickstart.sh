#!/usr/bin/env bash
# The one command that runs lockscope on a fresh Debian machine with Node.js 20 and npm:
#   installs what is missing (redis-server; npm packages), builds (pages and compiled server, agent and CLI: npm run
#   build), and starts the dashboard and an agent with plain node.
# With no REDIS_URLS configured it starts a throwaway redis-server on a free loopback port and a demo workload that
# takes and releases real locks, so the screen is live at once. Open http://127.0.0.1:${PORT:-3000}.
# Stopping it (Ctrl-C, SIGTERM, or the dashboard exiting) stops everything it started, demo workload first.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-deps.sh run
export NEXT_TELEMETRY_DISABLED=1
stale=$(find app components lib agent cli scripts prisma package.json -newer dist/start.mjs -type f -print -quit 2>/dev/null || true)
if [ ! -f .next/BUILD_ID ] || [ ! -f dist/start.mjs ] || [ -n "$stale" ]; then
  echo "lockscope: building (npm run build)"
  npm run build --silent >/tmp/lockscope-build-$$.log 2>&1 || { tail -40 /tmp/lockscope-build-$$.log; exit 1; }
  rm -f /tmp/lockscope-build-$$.log
fi

demo_pid=""
db_demo_pid=""
redis_pid=""
start_pid=""
stop_pid() {
  [ -n "$1" ] || return 0
  kill "$1" 2>/dev/null || return 0
  for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$1" 2>/dev/null || true
}
cleanup() {
  trap - EXIT INT TERM
  # The workload first: it must not see its redis-server vanish under it.
  stop_pid "$demo_pid"
  stop_pid "$db_demo_pid"
  stop_pid "$start_pid"
  stop_pid "$redis_pid"
  [ -n "${demo_dir:-}" ] && rm -rf "$demo_dir"
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -z "${REDIS_URLS:-}" ]; then
  demo_port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
  demo_dir=$(mktemp -d)
  redis-server --port "$demo_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$demo_dir" \
    --logfile "$demo_dir/redis.log" --notify-keyspace-events "" &
  redis_pid=$!
  export REDIS_URLS="redis://127.0.0.1:$demo_port"
  for _ in $(seq 1 50); do redis-cli -p "$demo_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  echo "lockscope: no REDIS_URLS configured: demo redis-server on $REDIS_URLS with a demo workload"
  LOCKSCOPE_STOP_WITH_PID=$$ node dist/demo-workload.mjs &
  demo_pid=$!
fi

# Database locks: with neither POSTGRES_URLS nor MYSQL_URLS set, watch the local PostgreSQL / MariaDB when they
# answer on loopback, with a demo workload in a throwaway database (dropped on exit). LOCKSCOPE_DB_DEMO=off skips it.
if [ -z "${POSTGRES_URLS:-}${MYSQL_URLS:-}" ] && [ "${LOCKSCOPE_DB_DEMO:-on}" != "off" ]; then
  eval "$(npx tsx scripts/demo-db-locks.ts --detect)"
  if [ -n "${POSTGRES_URLS:-}${MYSQL_URLS:-}" ]; then
    # Short thresholds so the demo's idle holders are flagged within a minute, not ten.
    export DB_IDLE_HOLDER_MS="${DB_IDLE_HOLDER_MS:-30000}" DB_IDLE_IN_TRANSACTION_MS="${DB_IDLE_IN_TRANSACTION_MS:-15000}"
    echo "lockscope: watching database locks on ${POSTGRES_URLS:-} ${MYSQL_URLS:-} with a demo workload"
    # tsx itself, not npx: SIGTERM from the cleanup must reach the script so it drops its demo database.
    node_modules/.bin/tsx scripts/demo-db-locks.ts &
    db_demo_pid=$!
  fi
fi

# Demo of every backend (scripts/demo/every-backend.ts): a Redlock group of five throwaway redis-servers, a ZooKeeper
# when installed, the seeds' "grab an order" race. It stops itself and all it started when this script is gone.
if [ -n "${demo_dir:-}" ] && [ -z "${REDLOCK_NODES:-}${ZK_CONNECT:-}" ]; then
  LOCKSCOPE_STOP_WITH_PID=$$ npx tsx scripts/demo/every-backend.ts "$demo_dir/backends.env" &
  for _ in $(seq 1 900); do [ -s "$demo_dir/backends.env" ] && break; sleep 0.1; done
  if [ -s "$demo_dir/backends.env" ]; then . "$demo_dir/backends.env"; fi
fi

echo "lockscope: open http://127.0.0.1:${PORT:-3000}"
node dist/start.mjs &
start_pid=$!
# `wait` returns early when a trapped signal arrives; the trap then exits and cleanup stops the rest.
set +e
wait "$start_pid"
code=$?
start_pid=""
exit "$code"
