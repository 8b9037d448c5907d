#!/usr/bin/env bash
# CI: the README's run command on this (fresh) clone, exactly as a newcomer runs it. Starts ./scripts/quickstart.sh
# in its own process group on a free port, waits for /api/health, checks through the API (bearer token) that the
# demo workload's locks are there, then stops the dashboard the way a crash would and checks that the quick start
# takes everything it started down with it: no process of its group left, no stack traces in its output.
set -euo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp /tmp/lockscope-quickstart-XXXXXX.log)
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
token="ci-quickstart-$(node -e 'console.log(require("crypto").randomBytes(12).toString("hex"))')"
base="http://127.0.0.1:$port"
say() { printf 'quickstart check: %s\n' "$*"; }

# setsid: the quick start leads its own process group, so "everything it started" is exactly that group.
PORT=$port API_TOKENS="ci:viewer:$token" setsid ./scripts/quickstart.sh >"$log" 2>&1 &
pgid=$!
group_alive() { pgrep -g "$pgid" >/dev/null 2>&1; }
fail() {
  say "FAILED: $*"
  echo "---- quick start output (last 60 lines) ----"
  tail -60 "$log"
  kill -KILL -- "-$pgid" 2>/dev/null || true
  exit 1
}
trap 'kill -KILL -- "-$pgid" 2>/dev/null || true' EXIT

# npm ci and the build run first on a fresh clone: minutes, not seconds.
say "started (process group $pgid, port $port); waiting for $base/api/health"
deadline=$((SECONDS + 900))
until curl -sf "$base/api/health" >/dev/null 2>&1; do
  kill -0 "$pgid" 2>/dev/null || fail "the quick start exited before the dashboard answered"
  [ $SECONDS -lt $deadline ] || fail "no answer from /api/health within 900 s"
  sleep 1
done
say "dashboard answers after ${SECONDS} s"

# The demo's locks, through the API as a script sees them: `{locks}` or the paged `{total, locks}`. They come and
# go by design (leases expire, workers pause), so each must be seen at least once within the window, not all at once.
expected="lock:legacy:nightly-report lock:orders:checkout lock:billing:invoice-run shipping:label-printer"
seen=" "
deadline=$((SECONDS + 120))
while :; do
  listed=$(curl -sf -H "authorization: Bearer $token" "$base/api/locks?limit=1000" 2>/dev/null |
    node -e '
      let s = "";
      process.stdin.on("data", (d) => (s += d)).on("end", () => {
        let body;
        try { body = JSON.parse(s); } catch { body = {}; }
        console.log((Array.isArray(body.locks) ? body.locks : []).map((l) => l.resource).join(" "));
      });') || listed=""
  missing=""
  for r in $expected; do
    case " $listed " in *" $r "*) seen="$seen$r " ;; esac
    case "$seen" in *" $r "*) ;; *) missing="$missing $r" ;; esac
  done
  [ -z "$missing" ] && break
  [ $SECONDS -lt $deadline ] || fail "the demo's locks did not appear within 120 s: never saw$missing"
  sleep 1
done
say "the demo's locks are listed ($expected)"

# The issue's failure: the dashboard exits; the quick start must stop the agent, the demo workload and its
# redis-server by itself, cleanly.
dashboard_pid=$(pgrep -g "$pgid" -f "dist/dashboard.mjs" | head -1 || true)
[ -n "$dashboard_pid" ] || fail "no dist/dashboard.mjs in the quick start's process group (not the production build?)"
kill -TERM "$dashboard_pid"
deadline=$((SECONDS + 30))
while group_alive && [ $SECONDS -lt $deadline ]; do sleep 0.5; done
if group_alive; then
  left=$(pgrep -g "$pgid" -a || true)
  kill -TERM -- "-$pgid" 2>/dev/null || true
  sleep 5
  kill -KILL -- "-$pgid" 2>/dev/null || true
  fail "still running 30 s after the dashboard stopped: $left"
fi
if grep -nE 'Unhandled error event|MaxRetriesPerRequestError|UnhandledPromiseRejection|^\s+at ' "$log"; then
  fail "stack traces or unhandled errors in the output after the stop"
fi
curl -sf "$base/api/health" >/dev/null 2>&1 && fail "something still answers on port $port"
say "stopped cleanly: the dashboard, agent, demo workload and demo redis-server are gone"
rm -f "$log"
