#!/usr/bin/env bash
# bench/init-rounds.sh: whether `initialize` slows as the sessions table grows (BENCHMARKS.md,
# issue 67, fifth and sixth sessions). One teamgate (bench configuration, SQLite unless
# TEAMGATE__STORE__URL says otherwise), ROUNDS rounds of `initialize` at c=16 (wrk -t2, 5 s, each
# request a new 2025-era session) with 5 s between them, printing each round's
# "round rps failed cpu_ticks rss_mib" (RSS read 5 s after the round). Not part of bench/run: a by-hand probe on a binary built with
# `cargo build --release --features conformance` (the fixtures of config/conformance.toml).
#   BIN=target/release bench/init-rounds.sh
# Env: BIN (target/release), ROUNDS (6).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
need_wrk
BIN="${BIN:-target/release}" ROUNDS="${ROUNDS:-6}"
W="$(mktemp -d)"
PORT="$(free_port)"
# Apart from the database: teamgate watches its configuration files' folders.
mkdir -p "$W/config"
printf '[server]\nlisten = "127.0.0.1:%s"\n' "$PORT" >"$W/config/port.toml"
export TEAMGATE__STORE__URL="${TEAMGATE__STORE__URL:-sqlite://$W/tg.db}"
CFG=(--config config/conformance.toml --config bench/teamgate.toml --config "$W/config/port.toml")
"$BIN/teamgate" migrate "${CFG[@]}" >/dev/null 2>&1
"$BIN/teamgate" serve "${CFG[@]}" >"$W/tg.log" 2>&1 &
TGPID=$!
trap 'kill $TGPID 2>/dev/null; wait $TGPID 2>/dev/null; rm -rf "$W"' EXIT
URL="http://127.0.0.1:$PORT/mcp"
for _ in $(seq 50); do answers "$URL" && break; sleep 0.2; done
answers "$URL" || { echo "teamgate did not start:" >&2; tail -n 5 "$W/tg.log" >&2; exit 1; }
TOKEN="$("$BIN/teamgate" token "${CFG[@]}" create --user bench --name bench 2>/dev/null | tail -n 1)"
BODY='{"jsonrpc":"2.0","id":__ID__,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}'
for round in $(seq "$ROUNDS"); do
  before="$(proc_ticks "$TGPID")"
  BENCH_BODY="$BODY" BENCH_EXPECT=protocolVersion BENCH_LIMIT=2000000 BENCH_THREAD_BASE=$((round * 10)) \
    timeout 30 wrk -t2 -c16 -d5s -s bench/load.lua -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H "Authorization: Bearer $TOKEN" \
    "$URL" >"$W/wrk.txt" 2>&1
  failed="$(bench_json "$W/wrk.txt" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("failed", "?"))')"
  cpu=$(($(proc_ticks "$TGPID") - before))
  # Read after the pause: the round's sessions have left memory (session_memory_idle, 1 s).
  sleep 5
  rss="$(awk -v k="$(proc_rss_kib "$TGPID")" 'BEGIN{printf "%.1f", k / 1024}')"
  echo "$round $(requests_per_second "$W/wrk.txt") $failed $cpu $rss"
done
