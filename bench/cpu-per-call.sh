#!/usr/bin/env bash
# bench/cpu-per-call.sh: what each process spends per request, turn by turn beside raw rmcp
# (BENCHMARKS.md, issue 67, twelfth session). On this 2-core machine a server's rate is the cores
# divided by what every process on them spends per request (the server, wrk, and the database or
# the upstream when there is one), so these figures are the cause behind each ratio bench/run
# reads, and they move less with the machine's drift than the rates do. Not part of bench/run: a
# by-hand probe on binaries already built (teamgate with `--features conformance`, bench-server).
#   BIN=target/dist bench/cpu-per-call.sh              # SQLite: stateless and legacy tools/call
#                                                      # at c=64, initialize at c=16
#   STORE=postgres bench/cpu-per-call.sh               # teamgate on the PostgreSQL at 127.0.0.1:5432
#   MODES="proxied proxied-c1" bench/cpu-per-call.sh   # raw rmcp as teamgate's upstream, c=64 / c=1
# Prints one line per turn: requests per second, then microseconds of CPU per request for the
# server (its tokio workers, its SQLite threads, jemalloc's background threads, the rest), the
# database's processes, the upstream
# and wrk, and the server's context switches per request.
# Env: BIN (target/dist), ROUNDS (3), SECS (5), STORE (sqlite|postgres), MODES, TG_ENV (VAR=value
# words for teamgate, e.g. TOKIO_WORKER_THREADS=1).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
need_wrk
BIN="${BIN:-target/dist}" ROUNDS="${ROUNDS:-3}" SECS="${SECS:-5}" STORE="${STORE:-sqlite}"
MODES="${MODES:-stateless legacy initialize}"
W="$(mktemp -d)"
trap 'stop_probe "$W"' EXIT
start_raw_rmcp "$W" || exit 1
# Database connections kept for the whole probe, so the database's processes live to be counted.
export TEAMGATE__STORE__CONNECTION_LIFETIME=1h
# The upstream only when a proxied mode is asked for, so the other modes run bench/run's
# configuration.
OVERLAY=""
[[ " $MODES " == *" proxied"* ]] && OVERLAY="$(upstream_overlay "$RAW_PORT")"
# shellcheck disable=SC2086 # TG_ENV is a list of VAR=value words
start_teamgate "$W" "$OVERLAY" env ${TG_ENV:-} || exit 1

LEGACY=2025-06-18
INIT_BODY='{"jsonrpc":"2.0","id":__ID__,"method":"initialize","params":{"protocolVersion":"'$LEGACY'","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}'
LEGACY_BODY='{"jsonrpc":"2.0","id":__ID__,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}'

# ticks_by PID: "group ticks" lines, the process's threads summed by kind.
ticks_by() {
  local t
  for t in /proc/"$1"/task/*; do
    echo "$(cat "$t/comm" 2>/dev/null) $(sed 's/.*) //' "$t/stat" 2>/dev/null | awk '{print $12 + $13}')"
  done | awk '{k = $1 ~ /^tokio-r/ ? "workers" : $1 ~ /^sqlx-sqlite/ ? "sqlite" : $1 ~ /^jemalloc/ ? "jemalloc" : "other"
      a[k] += $NF}
    END {printf "workers %d\nsqlite %d\njemalloc %d\nother %d\n", a["workers"], a["sqlite"], a["jemalloc"], a["other"]}'
}
db_ticks() {
  [[ $STORE == postgres ]] || { echo 0; return; }
  local p
  for p in $(pgrep -u postgres); do proc_ticks "$p" 2>/dev/null; done | awk '{s += $1} END{print s + 0}'
}
# session PORT [AUTH...]: a 2025-06-18 session's id, initialized.
session() {
  local port="$1" id; shift
  id="$(curl -sS -m 10 -D - -o /dev/null -X POST -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' "$@" -d "${INIT_BODY/__ID__/1}" \
    "http://127.0.0.1:$port/mcp" | awk 'tolower($1)=="mcp-session-id:"{print $2}' | tr -d '\r')"
  curl -sS -m 10 -o /dev/null -X POST -H 'Content-Type: application/json' -H "Mcp-Session-Id: $id" \
    -H "MCP-Protocol-Version: $LEGACY" -H 'Accept: application/json, text/event-stream' "$@" \
    -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "http://127.0.0.1:$port/mcp"
  echo "$id"
}
# turn NAME PID PORT MODE [AUTH...]: one load; prints its line.
turn() {
  local name="$1" pid="$2" port="$3" mode="$4" c=64 body tool=test_simple_text expect='simple text'
  shift 4
  local headers=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' "$@")
  case "$mode" in
    stateless) body="$TOOLS_CALL_BODY" ;;
    proxied | proxied-c1) tool=up_test_simple_text body="${TOOLS_CALL_BODY/test_simple_text/$tool}"
      [[ $mode == proxied-c1 ]] && c=1 ;;
    legacy) body="$LEGACY_BODY"
      headers+=(-H "Mcp-Session-Id: $(session "$port" "$@")" -H "MCP-Protocol-Version: $LEGACY") ;;
    initialize) body="$INIT_BODY" c=16 expect=protocolVersion ;;
  esac
  [[ $mode == stateless || $mode == proxied* ]] && headers+=(-H 'MCP-Protocol-Version: 2026-07-28' \
    -H 'Mcp-Method: tools/call' -H "Mcp-Name: $tool")
  local w0 d0 u0 s0 wrk0 w1 d1 u1 s1 n rps
  ticks_by "$pid" >"$W/t0"; d0="$(db_ticks)"; u0="$(proc_ticks "$RAW_PID")"; s0="$(ctx_switches "$pid")"
  BENCH_BODY="$body" BENCH_EXPECT="$expect" BENCH_LIMIT=5000000 \
    timeout -k 5 $((SECS + 20)) wrk -t1 -c"$c" -d"${SECS}s" --timeout 10s -s bench/load.lua \
    "${headers[@]}" "http://127.0.0.1:$port/mcp" >"$W/wrk.txt" 2>&1 &
  local wrk_pid=$!
  sleep "$((SECS - 1))"
  wrk0="$(proc_ticks "$(pgrep -P "$wrk_pid" wrk)" 2>/dev/null || echo 0)"
  wait "$wrk_pid"
  ticks_by "$pid" >"$W/t1"; d1="$(db_ticks)"; u1="$(proc_ticks "$RAW_PID")"; s1="$(ctx_switches "$pid")"
  read -r rps _ _ n _ _ <<<"$(python3 bench/report.py wrk "$W/wrk.txt")"
  [[ "${n:-0}" -gt 0 ]] || { echo "$name $mode: no request answered (see $W/wrk.txt)"; return; }
  # A clock tick is 10 ms: microseconds per request = ticks * 10000 / requests.
  paste "$W/t0" "$W/t1" | awk -v n="$n" -v name="$name" -v mode="$mode" -v c="$c" -v rps="$rps" \
    -v db=$((d1 - d0)) -v up=$((u1 - u0)) -v wrk="$wrk0" -v secs="$SECS" -v sw=$((s1 - s0)) \
    -v self="$([[ $name == raw ]] && echo 1 || echo 0)" '
    {cpu[$1] = ($4 - $2) * 10000 / n; all += cpu[$1]}
    END {
      if (self) up = 0  # the upstream is the server itself
      printf "%-8s %-10s c=%-2s %8.0f req/s  us per request: server %5.1f (workers %.1f, sqlite %.1f, jemalloc %.1f, other %.1f)  database %4.1f  upstream %4.1f  wrk %4.1f  switches %.2f\n",
        name, mode, c, rps, all, cpu["workers"], cpu["sqlite"], cpu["jemalloc"], cpu["other"], db * 10000 / n,
        up * 10000 / n, wrk * 10000 / (n * (secs - 1) / secs), sw / n
    }'
}
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); store $STORE; $SECS s turns"
STOLEN0="$(cpu_stat)"
for round in $(seq "$ROUNDS"); do
  for mode in $MODES; do
    [[ $mode == proxied* ]] || turn raw "$RAW_PID" "$RAW_PORT" "$mode"
    turn teamgate "$TG_PID" "$TG_PORT" "$mode" -H "Authorization: Bearer $TOKEN"
  done
  echo "(round $round)"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); CPU stolen by the host meanwhile: $(steal_since "$STOLEN0") %"
