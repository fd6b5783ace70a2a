#!/usr/bin/env bash
# The cost of `audit.durable` (issue 64 part 3): tools/call c=64 and c=1 on the conformance fixture
# `test_simple_text` (2026-07-28), every call audited, each reply held until its row is committed
# (`true`) against rows written just after the reply (`false`), alternating for PAIRS rounds of 5 s
# (wrk, bench/load.lua), on SQLite (a file in a temp dir) and on this machine's PostgreSQL (a
# database made and dropped here). Build first: `cargo build --release --features conformance`.
# Usage: bench/durable.sh [BINARY] [PAIRS]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. bench/lib.sh
BIN="${1:-target/release/teamgate}"; PAIRS="${2:-3}"
PG="${TEAMGATE_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/postgres}"
need_wrk
run() { # $1 store (sqlite/postgres), $2 durable (true/false), $3 connections
  d=$(mktemp -d); port=$((18000 + RANDOM % 1000)); db=""
  if [ "$1" = postgres ]; then
    db="teamgate_bench_durable_$$_$RANDOM"; psql "$PG" -qc "CREATE DATABASE $db" >/dev/null
    url="${PG%/*}/$db"
  else
    url="sqlite://$d/teamgate.db"
  fi
  env TEAMGATE__STORE__URL="$url" TEAMGATE__AUTH__MODE=none TEAMGATE__RELOAD__WATCH=false \
    TEAMGATE__MCP__REQUEST_STATE_KEYS='["bench-durable-key-of-at-least-32-characters"]' \
    TEAMGATE__AUDIT__DURABLE="$2" TEAMGATE__RATE_LIMIT__PER_CALLER_PER_MINUTE=50000000 \
    TEAMGATE__RATE_LIMIT__PER_CALLER_BURST=1000000 TEAMGATE__RATE_LIMIT__UNAUTHENTICATED_PER_MINUTE=50000000 \
    TEAMGATE__RATE_LIMIT__UNAUTHENTICATED_BURST=1000000 \
    "$BIN" serve --config config/conformance.toml --listen 127.0.0.1:$port >$d/log 2>&1 &
  pid=$!; sleep 3
  wrk_tools_call "$port" "$3" "$d/wrk" --latency
  rps=$(requests_per_second "$d/wrk")
  p50=$(awk '/Latency Distribution/{f=1} f && $1=="50%"{print $2; exit}' $d/wrk)
  p99=$(awk '/Latency Distribution/{f=1} f && $1=="99%"{print $2; exit}' $d/wrk)
  echo "store=$1 durable=$2 c=$3 $rps req/s p50 $p50 p99 $p99"
  kill $pid; wait $pid 2>/dev/null; rm -rf $d
  [ -n "$db" ] && psql "$PG" -qc "DROP DATABASE IF EXISTS $db" >/dev/null
}
uptime
for store in sqlite postgres; do
  for _ in $(seq "$PAIRS"); do
    for c in 64 1; do run "$store" false "$c"; run "$store" true "$c"; done
  done
done
