#!/usr/bin/env bash
# bench/native-profile.sh: where a request's CPU goes natively, by part (the kernel, memcpy, the
# allocator, rmcp, teamgate's own code, axum, SQLite...), raw rmcp and teamgate side by side
# (BENCHMARKS.md, issue 67, thirteenth session). perf's flat profile of each server's process under
# a load, its samples turned into microseconds per request. bench/callgrind.sh counts instructions,
# which repeat; this reads time, where copies, system calls and thread wake-ups weigh what they cost
# on this machine. Not part of bench/run: a by-hand probe on binaries already built (teamgate with
# `--features conformance`, bench-server), as root (perf).
#   BIN=target/dist bench/native-profile.sh     # stateless tools/call c=64: raw rmcp, then teamgate
#   MODE=proxied bench/native-profile.sh        # teamgate in front of raw rmcp (teamgate's process)
#   STORE=postgres bench/native-profile.sh      # teamgate on PostgreSQL, and the database's processes
#   MODE=proxied CONNS=1 TG_ENV=TOKIO_WORKER_THREADS=1 bench/native-profile.sh   # the hop at c=1, one worker
# Env: BIN (target/dist), MODE (stateless|proxied), STORE (sqlite|postgres), CONNS (64), TG_ENV
# (VAR=value words for teamgate), FREQ (1999 Hz), TOP (12).
# Prints, per profiled process: req/s, CPU per request, microseconds per request by part, and the
# TOP symbols.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
need_wrk
command -v perf >/dev/null || { echo "perf is missing (Debian: linux-perf)"; exit 1; }
BIN="${BIN:-target/dist}" MODE="${MODE:-stateless}" STORE="${STORE:-sqlite}"
FREQ="${FREQ:-1999}" TOP="${TOP:-12}" CONNS="${CONNS:-64}" SECS=4
W="$(mktemp -d)"
trap 'stop_probe "$W"' EXIT
start_raw_rmcp "$W" || exit 1
export TEAMGATE__STORE__CONNECTION_LIFETIME=1h
OVERLAY=""
[[ $MODE == proxied ]] && OVERLAY="$(upstream_overlay "$RAW_PORT")"
# shellcheck disable=SC2086 # TG_ENV is a list of VAR=value words
start_teamgate "$W" "$OVERLAY" env ${TG_ENV:-} || exit 1

# parts FILE US: the symbols of perf's FILE summed by part, as microseconds per request of the US
# the process spent per request in all.
parts() {
  perf report -i "$1" --sort sym --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | awk -v us="$2" '
    { pct = $1; sub("%", "", pct); s = $0; k = "the rest (std, futures, bytes...)"
      if (s ~ /\[k\]/) k = "kernel"
      else if (s ~ /memmove|memcpy/) k = "memcpy"
      else if (s ~ /_rjem|malloc|_int_free|cfree|unlink_chunk|tcache/) k = "allocator"
      else if (s ~ /memcmp|memset|strlen|strchr/) k = "libc, other"
      else if (s ~ /sqlite3|sqlx/) k = "SQLite, sqlx"
      else if (s ~ /opentelemetry|sip::Hasher|KeyValue/) k = "metrics (opentelemetry, SipHash)"
      else if (s ~ /teamgate::/) k = "teamgate"
      else if (s ~ /rmcp::/) k = "rmcp"
      else if (s ~ /axum::/) k = "axum"
      else if (s ~ /tower_http::|tower::/) k = "tower, tower-http"
      else if (s ~ /hyper/) k = "hyper"
      else if (s ~ /tokio::|tokio_util::/) k = "tokio"
      else if (s ~ /serde/) k = "serde"
      else if (s ~ /http::|httparse/) k = "http"
      part[k] += pct }
    END { for (k in part) printf "  %7.1f us  %s\n", part[k] * us / 100, k }' | sort -rn
}

# samples FILE: how many samples perf's FILE holds.
samples() {
  perf report -i "$1" --stdio --sort dso -n 2>/dev/null | awk '!/^#/ && NF {s += $2} END {print s + 0}'
}

# us_per_request SAMPLES RPS: the CPU a profile's SAMPLES stand for per request, in microseconds.
# perf samples FREQ times a second of CPU, so: samples / FREQ / (RPS * SECS) seconds.
us_per_request() {
  awk -v n="$1" -v f="$FREQ" -v r="$2" -v s="$SECS" 'BEGIN {printf "%.1f", n / f * 1e6 / (r * s)}'
}

# profile NAME PORT PIDS TOOL [AUTH...]: a 5 s load on PORT (after one to warm up), PIDS profiled
# for 4 s of it.
profile() {
  local name="$1" port="$2" pids="$3" tool="$4" rps n us db_pids=""
  shift 4
  BENCH_TOOL="$tool" wrk_tools_call "$port" "$CONNS" "$W/warm.txt" "$@"
  BENCH_TOOL="$tool" wrk_tools_call "$port" "$CONNS" "$W/wrk.txt" "$@" &
  local wrk_job=$! db_perf=""
  sleep 0.5
  if [[ $STORE == postgres && $name == teamgate* ]]; then
    db_pids="$(pgrep -u postgres | paste -sd,)"
    perf record -q -F "$FREQ" -p "$db_pids" -o "$W/database.data" -- sleep "$SECS" >/dev/null 2>&1 &
    db_perf=$!
  fi
  perf record -q -F "$FREQ" -p "$pids" -o "$W/$name.data" -- sleep "$SECS" >/dev/null 2>&1
  wait "$wrk_job" $db_perf
  rps="$(requests_per_second "$W/wrk.txt")"
  n="$(samples "$W/$name.data")"
  us="$(us_per_request "$n" "$rps")"
  echo "$name: $rps req/s, $us us of CPU per request ($n samples)"
  parts "$W/$name.data" "$us"
  echo "  top symbols:"
  perf report -i "$W/$name.data" --sort sym --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' |
    head -n "$TOP" | cut -c1-150
  if [[ -n $db_pids ]]; then
    echo "the database (PostgreSQL's processes): $(us_per_request "$(samples "$W/database.data")" "$rps")" \
      "us of CPU per request; by library:"
    perf report -i "$W/database.data" --sort dso --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -6
    perf report -i "$W/database.data" --sort sym --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' |
      head -n "$TOP" | cut -c1-150
  fi
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); mode $MODE; store $STORE; c=$CONNS"
if [[ $MODE == proxied ]]; then
  profile teamgate-proxied "$TG_PORT" "$TG_PID" up_test_simple_text -H "Authorization: Bearer $TOKEN"
else
  profile raw-rmcp "$RAW_PORT" "$RAW_PID" test_simple_text
  profile teamgate "$TG_PORT" "$TG_PID" test_simple_text -H "Authorization: Bearer $TOKEN"
fi
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
