#!/usr/bin/env bash
# Make sure PostgreSQL answers on 127.0.0.1:5432 for the test suite (the postgres storage and
# billing tests never skip). Starts the machine's cluster when it is down and waits until it answers.
# Tests create their own schema in database `test` and drop it.
set -euo pipefail

ready() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }

if ready; then
  echo "postgres: already answering on 127.0.0.1:5432"
else
  echo "postgres: starting the cluster"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
  for _ in $(seq 1 50); do ready && break; sleep 0.2; done
  ready || { echo "postgres: did not become ready" >&2; exit 1; }
fi
# The database the tests use.
psql -h 127.0.0.1 -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 || psql -h 127.0.0.1 -d postgres -c 'CREATE DATABASE test'
