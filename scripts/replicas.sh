#!/usr/bin/env bash
# Multi-replica check: two `teamgate serve` processes on one fresh PostgreSQL database, driven by the
# official TypeScript SDK client (tests/interop/replicas.mjs) with no sticky routing. Skips, saying so,
# when no PostgreSQL server answers at TEAMGATE_TEST_POSTGRES (default postgres://postgres@127.0.0.1:5432/test).
# Usage: scripts/replicas.sh [path/to/teamgate]
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BIN="${1:-target/debug/teamgate}"
ADMIN="${TEAMGATE_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/test}"
if ! psql "$ADMIN" -qAtc 'select 1' >/dev/null 2>&1; then
  echo "replicas: SKIP: no PostgreSQL server answers at $ADMIN"
  echo "replicas: 0 passed, 0 failed"
  exit 0
fi
scripts/install-test-deps.sh >/dev/null || exit 1
DB="teamgate_replicas_$$_$RANDOM"
psql "$ADMIN" -qc "create database $DB" || exit 1
URL="${ADMIN%/*}/$DB"
LOGDIR="$ROOT/.cache/replicas"; mkdir -p "$LOGDIR"
KEY="replica-test-key-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  psql "$ADMIN" -qc "drop database if exists $DB with (force)" >/dev/null 2>&1
}
trap cleanup EXIT

export TEAMGATE__STORE__URL="$URL"
TOKEN="$("$BIN" token create --user replica-tester --name ci | tail -n 1)" || exit 1
urls=()
for name in a b; do
  log="$LOGDIR/$name.log"
  TEAMGATE__LOG__FORMAT=json TEAMGATE__STORE__URL="$URL" TEAMGATE__MCP__REQUEST_STATE_KEYS="[\"$KEY\"]" \
    "$BIN" serve --config config/conformance.toml --listen 127.0.0.1:0 >"$log" 2>&1 &
  pids+=($!)
  u=""
  for _ in $(seq 100); do
    u="$(grep -o '"url":"http://[^"]*"' "$log" 2>/dev/null | head -1 | cut -d'"' -f4)" && [[ -n "$u" ]] && break
    sleep 0.1
  done
  [[ -n "$u" ]] || { echo "replicas: replica $name did not start:"; cat "$log"; exit 1; }
  urls+=("$u")
done
echo "replicas: A=${urls[0]} B=${urls[1]} on PostgreSQL database $DB"
timeout 120 node tests/interop/replicas.mjs --a "${urls[0]}" --b "${urls[1]}" --token "$TOKEN"
