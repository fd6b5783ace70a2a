#!/usr/bin/env bash
# Instructions per tools/call (or per initialize), counted by callgrind (repeatable whatever else the machine is
# doing, unlike a rate): the server runs under `valgrind --tool=callgrind` with instrumentation off,
# is warmed with WARM calls, then N calls are counted (CONC keep-alive connections, each one's
# calls one after another) and the profile is dumped for `callgrind_annotate`.
#
#   bench/callgrind.sh teamgate|teamgate-upstream|raw-rmcp [stateless|legacy|initialize] [N]
#
# BIN (default target/release) holds teamgate and bench-server; the teamgate run uses the
# benchmark's configuration (config/conformance.toml + bench/teamgate.toml, SQLite). CONC (default
# 32, as BENCHMARKS.md's figures) connections share the N calls, so the audit writer's batches are more than one record, as
# under the benchmark's loads. glibc's memcpy is kept off `rep movsb`, which callgrind counts as
# one instruction per byte: a large copy then weighs its vector loop's instructions instead.
# Prints Ir per call; the profile is .cache/callgrind/<server>-<mode>.out.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
SERVER="${1:?teamgate or raw-rmcp}" MODE="${2:-stateless}" N="${3:-2000}" WARM="${WARM:-300}" CONC="${CONC:-32}"
BIN="${BIN:-target/release}"
OUT=.cache/callgrind; mkdir -p "$OUT"
# The server under callgrind (PID), then teamgate, raw rmcp and a PostgreSQL database where the
# run has them (stop_probe).
WORK="$(mktemp -d)"; trap 'kill "${PID:-}" 2>/dev/null || true; stop_probe "$WORK" || true' EXIT
PORT="$(free_port)"
URL="http://127.0.0.1:$PORT/mcp" TOKEN=- PROFILE="$OUT/$SERVER-$MODE.out"
CG=(env GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=4294967295 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$PROFILE")
TOOL=test_simple_text
if [[ $SERVER == teamgate-upstream ]]; then
  # teamgate in front of raw rmcp (not counted: its own process), as bench/run's upstream rows.
  start_raw_rmcp "$WORK" || exit 1
  OVERLAY="$(upstream_overlay "$RAW_PORT")"
  TOOL=up_test_simple_text
fi
case "$SERVER" in
  teamgate|teamgate-upstream)
    TG_PORT=$PORT
    start_teamgate "$WORK" "${OVERLAY:-}" "${CG[@]}" || exit 1
    PID=$TG_PID
    ;;
  raw-rmcp)
    "${CG[@]}" "$BIN/bench-server" rmcp "127.0.0.1:$PORT" >"$WORK/log" 2>&1 &
    PID=$!
    ;;
  *) echo "unknown server $SERVER" >&2; exit 2 ;;
esac
for _ in $(seq 300); do
  answers "$URL" && break
  sleep 0.2
done
python3 bench/callgrind_calls.py "$URL" "$WARM" "$MODE" "$TOKEN" "$TOOL" "$CONC" >/dev/null
callgrind_control -i on "$PID" >/dev/null 2>&1
python3 bench/callgrind_calls.py "$URL" "$N" "$MODE" "$TOKEN" "$TOOL" "$CONC"
callgrind_control -d "$PID" >/dev/null 2>&1
callgrind_control -i off "$PID" >/dev/null 2>&1
kill -INT "$PID"; wait "$PID" 2>/dev/null || true
# The dump taken while collecting is the one with the calls (a second file at exit is empty).
DUMP="$(ls -S "$PROFILE"* | head -n 1)"
IR="$(callgrind_annotate "$DUMP" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')"
echo "$SERVER $MODE: $((IR / N)) Ir per call ($IR over $N calls on $CONC connections; profile $DUMP)"
