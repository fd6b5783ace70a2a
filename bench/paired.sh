#!/usr/bin/env bash
# Two teamgate binaries side by side (issue 61's "paired runs before and after"): tools/call c=16 and
# c=64 on the conformance fixture `test_simple_text` (2026-07-28, stateless), SQLite store, auth off,
# quotas off, alternating A and B for PAIRS rounds of 5 s each (wrk, bench/load.lua), so the machine's
# drift hits both alike. Build each with `cargo build --release --features conformance`.
# Usage: [DIR_A=checkout] [DIR_B=checkout] bench/paired.sh BIN_A BIN_B [PAIRS]: each binary runs in its
# own checkout (DIR_A, DIR_B; default this one), whose config/ it reads. Loopback only; every run
# bounded by wrk -d and timeout.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. bench/lib.sh
A="$1"; B="$2"; PAIRS="${3:-3}"; DIR_A="${DIR_A:-$PWD}"; DIR_B="${DIR_B:-$PWD}"
need_wrk
run() { # $1 label, $2 binary, $3 connections, $4 checkout
  d=$(mktemp -d); port=$((18000 + RANDOM % 1000))
  (cd "$4" && exec env TEAMGATE__STORE__URL="sqlite://$d/t.db" TEAMGATE__AUTH__MODE=none \
    TEAMGATE__RATE_LIMIT__ENABLED=false TEAMGATE__RELOAD__WATCH=false \
    "$2" serve --config config/conformance.toml --listen 127.0.0.1:$port >$d/log 2>&1) &
  pid=$!; sleep 2
  wrk_tools_call "$port" "$3" "$d/wrk"
  rps=$(requests_per_second "$d/wrk")
  json=$(bench_json "$d/wrk")
  echo "$1 c=$3 $rps req/s $json"
  kill $pid; wait $pid 2>/dev/null; rm -rf $d
}
uptime
for c in 16 64; do
  for _ in $(seq "$PAIRS"); do
    run A "$A" "$c" "$DIR_A"
    run B "$B" "$c" "$DIR_B"
  done
done
