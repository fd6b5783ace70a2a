#!/usr/bin/env bash
# bench/hop-c1.sh: where the upstream hop's latency goes at c=1 (BENCHMARKS.md, issue 67, third
# session). Raw rmcp (bench-server) as a 2026-07-28 upstream; ROUNDS rounds of the direct call,
# teamgate's own tool and the call through teamgate (5 s each, bench/lib.sh's load), printing each
# run's "rps p50_ms p99_ms ok failed secs" and the voluntary context switches per call of
# teamgate's and the upstream's threads. Not part of bench/run: a by-hand probe, on binaries
# already built.
#   BIN=target/dist bench/hop-c1.sh                          # the default runtime
#   TG_ENV=TOKIO_WORKER_THREADS=1 bench/hop-c1.sh            # teamgate on one worker thread
#   PERF=1 bench/hop-c1.sh                                   # also a perf record of teamgate (4 s)
# Env: BIN (teamgate and bench-server; target/dist), ROUNDS (3), CS ("1"), TG_ENV.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
need_wrk
BIN="${BIN:-target/dist}" ROUNDS="${ROUNDS:-3}" CS="${CS:-1}"
W="$(mktemp -d)"
trap 'stop_probe "$W"' EXIT
start_raw_rmcp "$W" || exit 1
# shellcheck disable=SC2086 # TG_ENV is a list of VAR=value words
start_teamgate "$W" "$(upstream_overlay "$RAW_PORT")" env ${TG_ENV:-} || exit 1
AUTH=(-H "Authorization: Bearer $TOKEN")
UPCALL="${TOOLS_CALL_BODY/test_simple_text/up_test_simple_text}"
for _ in $(seq 50); do
  curl -s -X POST -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream" \
    -H "MCP-Protocol-Version: 2026-07-28" -H "Mcp-Method: tools/call" -H "Mcp-Name: up_test_simple_text" \
    "${AUTH[@]}" -d "${UPCALL/__ID__/1}" "http://127.0.0.1:$TG_PORT/mcp" | grep -q 'simple text' && break
  sleep 0.2
done
run() { # PORT TOOL C [extra wrk arguments]: "rps p50_ms p99_ms ok failed secs"
  local port="$1" tool="$2" c="$3"; shift 3
  BENCH_TOOL="$tool" wrk_tools_call "$port" "$c" "$W/wrk.txt" "$@"
  python3 bench/report.py wrk "$W/wrk.txt"
}
per() { awk -v a="$1" -v n="$2" 'BEGIN{if (n > 0) printf "%.1f", a/n}'; }
for c in $CS; do
  for _ in $(seq "$ROUNDS"); do
    d="$(run "$RAW_PORT" test_simple_text "$c")"
    t0="$(ctx_switches "$TG_PID" voluntary)"
    o="$(run "$TG_PORT" test_simple_text "$c" "${AUTH[@]}")"
    t1="$(ctx_switches "$TG_PID" voluntary)" u1="$(ctx_switches "$RAW_PID" voluntary)"
    v="$(run "$TG_PORT" up_test_simple_text "$c" "${AUTH[@]}")"
    t2="$(ctx_switches "$TG_PID" voluntary)" u2="$(ctx_switches "$RAW_PID" voluntary)"
    on="$(awk '{print $4}' <<<"$o")" vn="$(awk '{print $4}' <<<"$v")"
    echo "c=$c direct: $d | own: $o | via: $v | switches/call: own $(per $((t1 - t0)) "$on")," \
      "via $(per $((t2 - t1)) "$vn"), upstream $(per $((u2 - u1)) "$vn")"
  done
done
if [[ -n "${PERF:-}" ]]; then
  perf record -q -F 2999 -g -p "$TG_PID" -o perf-hop.data -- sleep 4 >/dev/null 2>&1 &
  PERFPID=$!
  v="$(run "$TG_PORT" up_test_simple_text 1 "${AUTH[@]}")"
  wait "$PERFPID"
  echo "under perf: $v (perf report -i perf-hop.data --no-children --sort dso,sym)"
fi
