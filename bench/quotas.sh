#!/usr/bin/env bash
# Shared quotas' cost (issue 64 part 1): tools/call c=64 on the conformance fixture `test_simple_text`
# (2026-07-28), teamgate on this machine's PostgreSQL, quotas on but far above the load (nothing is
# refused, every call is counted), `rate_limit.shared = true` against `false`, alternating for PAIRS
# rounds of 5 s (wrk, bench/load.lua). A database is made and dropped here. Build first:
# `cargo build --release --features conformance`. Usage: bench/quotas.sh [BINARY] [PAIRS]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. bench/lib.sh
BIN="${1:-target/release/teamgate}"; PAIRS="${2:-3}"
PG="${TEAMGATE_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/postgres}"
need_wrk
run() { # $1 shared (true/false)
  db="teamgate_bench_quota_$$_$RANDOM"; psql "$PG" -qc "CREATE DATABASE $db" >/dev/null
  d=$(mktemp -d); port=$((18000 + RANDOM % 1000))
  env TEAMGATE__STORE__URL="${PG%/*}/$db" TEAMGATE__AUTH__MODE=none TEAMGATE__RELOAD__WATCH=false \
    TEAMGATE__MCP__REQUEST_STATE_KEYS='["bench-quotas-key-of-at-least-32-characters"]' \
    TEAMGATE__RATE_LIMIT__SHARED="$1" TEAMGATE__RATE_LIMIT__PER_CALLER_PER_MINUTE=50000000 \
    TEAMGATE__RATE_LIMIT__PER_CALLER_BURST=1000000 TEAMGATE__RATE_LIMIT__UNAUTHENTICATED_PER_MINUTE=50000000 \
    TEAMGATE__RATE_LIMIT__UNAUTHENTICATED_BURST=1000000 \
    "$BIN" serve --config config/conformance.toml --listen 127.0.0.1:$port >$d/log 2>&1 &
  pid=$!; sleep 3
  wrk_tools_call "$port" 64 "$d/wrk"
  rps=$(requests_per_second "$d/wrk")
  json=$(bench_json "$d/wrk")
  echo "shared=$1 c=64 $rps req/s $json"
  kill $pid; wait $pid 2>/dev/null; rm -rf $d
  psql "$PG" -qc "DROP DATABASE IF EXISTS $db" >/dev/null
}
uptime
for _ in $(seq "$PAIRS"); do run false; run true; done
