#!/usr/bin/env bash
# `npm test`: everything a change must pass, in the order that fails fastest.
# Installs what is missing first (redis-server, ZooKeeper, Chromium via apt-get; npm packages): see ensure-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export NEXT_TELEMETRY_DISABLED=1

bash scripts/ensure-deps.sh test

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
