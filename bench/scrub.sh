#!/usr/bin/env bash
# bench/scrub.sh: tools/call c=16 on target/release/teamgate, scrubbing on (a secret set) and off,
# three alternating pairs of 5 s wrk runs (bench/load.lua). Needs wrk (apt-get install wrk) and
# `cargo build --release --features conformance` (the fixtures it calls). Loopback only; each run
# bounded by wrk -d and timeout. (issue 59 item 3)
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. bench/lib.sh
run() { # $1 label, $2 secret or empty
  d=$(mktemp -d); port=$((18000 + RANDOM % 1000))
  env TEAMGATE__STORE__URL="sqlite://$d/t.db" TEAMGATE__AUTH__MODE=none TEAMGATE__RATE_LIMIT__ENABLED=false \
    ${2:+TEAMGATE__MCP__REQUEST_STATE_KEYS="[\"$2\"]"} TEAMGATE__RELOAD__WATCH=false \
    target/release/teamgate serve --config config/conformance.toml --listen 127.0.0.1:$port >$d/log 2>&1 &
  pid=$!; sleep 2
  wrk_tools_call "$port" 16 "$d/wrk"
  rps=$(requests_per_second "$d/wrk")
  fail=$(grep -o '"failed":[0-9]*' $d/wrk)
  echo "$1 $rps $fail"
  kill $pid; wait $pid 2>/dev/null; rm -rf $d
}
uptime
for i in 1 2 3; do
  run off ""
  run on "scrub-bench-key-7f3a9c2e51-0b6d4e8a27-5c1e9f04d3"
done
