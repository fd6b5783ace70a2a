#!/usr/bin/env bash
# RSS after the loads, one load at a time (BENCHMARKS.md, issue 67, ninth session): teamgate on
# SQLite with bench/run's configuration, idle after one call, then 5 s each of stateless
# `tools/call` c=64, legacy `tools/call` c=64 and `initialize` c=16 (skipped with SKIP_INIT=1), the
# peak RSS during `initialize`, and the RSS WAIT seconds later (60 by default), each split into
# file-backed and anonymous pages beside jemalloc's own figures (`teamgate_memory_bytes`).
# Usage: [SKIP_INIT=1] [WAIT=60] bench/rss-after.sh [BIN]   (BIN: a folder holding `teamgate`;
# target/dist by default). jemalloc's full statistics at exit: _RJEM_MALLOC_CONF=stats_print:true
# (printed into the server's log, which the script names at the end). Loopback only; every load bounded by wrk -d
# and timeout.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. bench/lib.sh
need_wrk
BIN="${1:-target/dist}"
DIR="$(mktemp -d)"
trap 'stop_teamgate; echo "server log: $TG_LOG"' EXIT
start_teamgate "$DIR" "" || exit 1
PID=$TG_PID URL="http://127.0.0.1:$TG_PORT/mcp"
HEADERS=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'
  -H "Authorization: Bearer $TOKEN")
STATELESS=(-H 'Mcp-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: test_simple_text')

show() { # LABEL: RSS split by kind of page, and jemalloc's account, in MiB
  local kind heap=""
  for kind in allocated active resident metadata retained; do
    heap+=" $kind $(memory_mib "$URL" "$kind")"
  done
  printf '%-10s RSS %.1f (file-backed %s, anonymous %s) | jemalloc:%s\n' "$1" \
    "$(awk -v k="$(proc_rss_kib "$PID")" 'BEGIN{printf "%.1f", k/1024}')" \
    "$(smaps_mib "$PID" file)" "$(smaps_mib "$PID" anon)" "$heap"
}
load() { # CONNECTIONS BODY EXPECT [HEADERS...]
  local c="$1" body="$2" expect="$3"; shift 3
  BENCH_BODY="$body" BENCH_EXPECT="$expect" BENCH_LIMIT=5000000 timeout 40 wrk -t2 -c"$c" -d5s \
    --timeout 10s -s bench/load.lua "${HEADERS[@]}" "$@" "$URL" | grep -o 'Requests/sec: *[0-9.]*'
}

curl -s -o /dev/null "${HEADERS[@]}" "${STATELESS[@]}" -d "${TOOLS_CALL_BODY/__ID__/1}" "$URL"
sleep 1
show idle
load 64 "$TOOLS_CALL_BODY" 'simple text' "${STATELESS[@]}"
show stateless
INIT='{"jsonrpc":"2.0","id":__ID__,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}'
SESSION="$(curl -s -D - -o /dev/null "${HEADERS[@]}" -d "${INIT/__ID__/1}" "$URL" \
  | awk 'tolower($1)=="mcp-session-id:"{print $2}' | tr -d '\r')"
LEGACY=(-H "Mcp-Session-Id: $SESSION" -H 'MCP-Protocol-Version: 2025-06-18')
curl -s -o /dev/null "${HEADERS[@]}" "${LEGACY[@]}" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$URL"
load 64 '{"jsonrpc":"2.0","id":__ID__,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}' \
  'simple text' "${LEGACY[@]}"
show legacy
if [[ -z "${SKIP_INIT:-}" ]]; then
  load 16 "$INIT" protocolVersion &
  driver=$!
  peak=0
  while kill -0 "$driver" 2>/dev/null; do
    rss="$(proc_rss_kib "$PID")"; (( rss > peak )) && peak=$rss; sleep 0.2
  done
  wait "$driver"
  echo "peak RSS during initialize: $(( peak / 1024 )) MiB"
  show initialize
fi
sleep 5; show "after 5 s"
sleep "$(( ${WAIT:-60} - 5 ))"; show "after ${WAIT:-60} s"
