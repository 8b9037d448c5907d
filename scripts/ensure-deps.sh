#!/usr/bin/env bash
# Installs what lockscope needs when it is missing, so one command works on a fresh Debian machine with Node.js and
# npm. `run`: redis-server (for the demo). `test`: also ZooKeeper (Java) and Chromium. Then npm packages when the
# lock file changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-run}"

pkgs=()
command -v redis-server >/dev/null 2>&1 || pkgs+=(redis-server)
if [ "$mode" = "test" ]; then
  [ -f /usr/share/java/zookeeper.jar ] || pkgs+=(zookeeper)
  [ -x /usr/bin/chromium ] || pkgs+=(chromium)
fi
if [ ${#pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "lockscope: missing ${pkgs[*]}; install them with: sudo apt-get install -y ${pkgs[*]}" >&2
    exit 1
  fi
  echo "lockscope: apt-get install ${pkgs[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
fi

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "lockscope: npm ci"
  npm ci --no-audit --no-fund
fi
