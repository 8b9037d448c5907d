#!/usr/bin/env bash
# `npm test`: everything a change must pass, in the order that fails fastest.
# Needs redis-server, ZooKeeper (Debian package) and /usr/bin/chromium; .ci/run and the README install them.
set -euo pipefail
cd "$(dirname "$0")/.."
export NEXT_TELEMETRY_DISABLED=1

for bin in redis-server java /usr/bin/chromium; do
  command -v "$bin" >/dev/null 2>&1 || { echo "npm test: $bin is missing; run .ci/run once or see README (Set-up)" >&2; exit 1; }
done
[ -f /usr/share/java/zookeeper.jar ] || { echo "npm test: ZooKeeper is missing (apt-get install -y zookeeper)" >&2; exit 1; }

step() { printf '\n== %s\n' "$*"; }

step "format (prettier --check)"
npx prettier --check . --log-level warn
step "types (tsc --noEmit)"
npx tsc --noEmit
step "lint (eslint, Next.js rules)"
npx eslint --max-warnings=0 .
step "unit and integration tests (vitest; real redis-server and ZooKeeper started by the harness)"
npx vitest run
step "build the pages (next build)"
npx next build >/tmp/lockscope-next-build.log 2>&1 || { tail -40 /tmp/lockscope-next-build.log; exit 1; }
step "end-to-end tests (Playwright, Debian Chromium)"
npx playwright test
