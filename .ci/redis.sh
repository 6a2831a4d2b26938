#!/usr/bin/env bash
# Make sure a Redis answers on 127.0.0.1:6379 for the test suite (the redis storage tests never skip).
# Installs redis-server from Debian's packages when it is missing, starts it without persistence,
# and waits until it answers PING.
set -euo pipefail

PORT=6379

ping_ok() {
  command -v redis-cli >/dev/null 2>&1 && [ "$(redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null || true)" = "PONG" ]
}

if ping_ok; then
  echo "redis: already answering on 127.0.0.1:$PORT"
  exit 0
fi

if ! command -v redis-server >/dev/null 2>&1; then
  echo "redis: installing redis-server"
  SUDO=""
  if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server
fi

echo "redis: starting redis-server on 127.0.0.1:$PORT"
redis-server --daemonize yes --bind 127.0.0.1 --port "$PORT" --save "" --appendonly no

for _ in $(seq 1 50); do
  if ping_ok; then
    echo "redis: answering on 127.0.0.1:$PORT"
    exit 0
  fi
  sleep 0.1
done

echo "redis: redis-server did not answer PING on 127.0.0.1:$PORT within 5 s" >&2
exit 1
