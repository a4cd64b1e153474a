#!/usr/bin/env bash
# `npm test` runs this first, so that the README's one test command works on a fresh machine with
# Node, npm, Redis and PostgreSQL: it starts the local Redis (127.0.0.1:6379) and PostgreSQL
# (127.0.0.1:5432) when they are down, and installs Debian's Chromium for the browser tests when it
# is missing. Whatever it cannot do it names in one line and stops, before the runner starts:
# a half-prepared machine would otherwise show up as dozens of unrelated test failures.
#
# CHROMIUM_PATH: the browser the tests launch (default /usr/bin/chromium, as test/browser/ reads it).
# TEST_SETUP_DRY_RUN=1: print the commands that would run instead of running them.
set -uo pipefail

CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"
DRY="${TEST_SETUP_DRY_RUN:-0}"

say() { echo "[test-setup] $*"; }
stop() {
  echo "npm test: $*" >&2
  exit 1
}
run() {
  if [ "$DRY" = 1 ]; then
    say "would run: $*" >&2
    return 0
  fi
  "$@"
}
# A TCP connect, not a protocol ping: the point is only whether something listens there.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
await_port() {
  [ "$DRY" = 1 ] && return 0
  for _ in $(seq 1 60); do
    listening "$1" && return 0
    sleep 0.5
  done
  return 1
}

if ! listening 6379; then
  command -v redis-server >/dev/null 2>&1 ||
    stop "Redis is not running on 127.0.0.1:6379 and redis-server is not installed: install it (apt-get install redis-server) or start a Redis there, then run npm test again."
  say "starting redis on 127.0.0.1:6379"
  run mkdir -p /var/lib/redis /var/log/redis 2>/dev/null
  run redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log >/dev/null
  await_port 6379 ||
    stop "Redis did not start on 127.0.0.1:6379 (see /var/log/redis/ci.log); start it yourself, then run npm test again."
fi

if ! listening 5432; then
  version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n1)
  { command -v pg_ctlcluster >/dev/null 2>&1 && [ -n "$version" ]; } ||
    stop "PostgreSQL is not running on 127.0.0.1:5432 and no local cluster was found (/etc/postgresql): install it (apt-get install postgresql) or start one there with trust auth for user postgres, then run npm test again."
  say "starting postgresql $version on 127.0.0.1:5432"
  run pg_ctlcluster --skip-systemctl-redirect "$version" main start
  await_port 5432 ||
    stop "PostgreSQL $version did not start on 127.0.0.1:5432 (see /var/log/postgresql/); start it yourself, then run npm test again."
fi

if [ ! -x "$CHROMIUM" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian's chromium for the browser tests"
    export DEBIAN_FRONTEND=noninteractive
    { run apt-get update -qq && run apt-get install -y -qq chromium >/dev/null; } ||
      stop "installing chromium failed (apt-get install chromium); install it yourself or set CHROMIUM_PATH, then run npm test again."
  else
    stop "Chromium is missing at $CHROMIUM (the browser tests need it): install Debian's chromium (sudo apt-get install chromium) or set CHROMIUM_PATH, then run npm test again."
  fi
  [ "$DRY" = 1 ] || [ -x "$CHROMIUM" ] ||
    stop "Chromium is still missing at $CHROMIUM after installing Debian's chromium (it installs /usr/bin/chromium): set CHROMIUM_PATH to it, then run npm test again."
fi
exit 0
