#!/usr/bin/env bash
# bench/hop-timeline.sh: where the upstream hop's latency goes at c=1, read off the wire
# (BENCHMARKS.md, issue 67, fourteenth session). Raw rmcp (bench-server) as a 2026-07-28 upstream
# behind teamgate; tcpdump captures loopback while `wrk -c1` calls the upstream directly, then
# through teamgate, and bench/hop_timeline.py cuts each call at its data packets: the member's
# request in, teamgate's request to the upstream out, the upstream's reply in, teamgate's reply
# out. Off-CPU time shows as the gaps: what teamgate's side spends before the upstream sees the
# request and after its reply is back, against the upstream's own time. The capture costs each
# packet a copy, so the rates read lower than bench/hop-c1.sh's; compare the steps, not the rates.
# Not part of bench/run: a by-hand probe on binaries already built, as root (tcpdump).
#   BIN=target/dist bench/hop-timeline.sh
# Env: BIN (teamgate and bench-server; target/dist), TG_ENV (as bench/hop-c1.sh).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
need_wrk
command -v tcpdump >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q tcpdump >/dev/null
BIN="${BIN:-target/dist}"
W="$(mktemp -d)"
trap 'stop_probe "$W"' EXIT
start_raw_rmcp "$W" || exit 1
# shellcheck disable=SC2086 # TG_ENV is a list of VAR=value words
start_teamgate "$W" "$(upstream_overlay "$RAW_PORT")" env ${TG_ENV:-} || exit 1
AUTH=(-H "Authorization: Bearer $TOKEN")

# timeline NAME PORT TOOL [AUTH...]: a warm-up, then 5 s of c=1 under tcpdump, cut into steps
# (the upstream's among them when the tool is teamgate's copy of the upstream's).
timeline() {
  local name="$1" port="$2" tool="$3" front="$2" tg=0
  shift 3
  [[ $tool == up_* ]] && tg=$TG_PORT front=$RAW_PORT
  BENCH_TOOL="$tool" wrk_tools_call "$port" 1 "$W/warm.txt" "$@"
  timeout 30 tcpdump -i lo -nn -s 200 -B 65536 -w "$W/$name.pcap" \
    "tcp port $RAW_PORT or tcp port $TG_PORT" 2>/dev/null &
  local dump=$!
  sleep 1
  BENCH_TOOL="$tool" wrk_tools_call "$port" 1 "$W/wrk.txt" "$@"
  sleep 0.5
  kill -INT "$dump"; wait "$dump"
  echo "$name: $(python3 bench/report.py wrk "$W/wrk.txt" | awk '{print $1 " req/s, p50 " $2 " ms"}') under the capture"
  tcpdump -nn -tt -r "$W/$name.pcap" 2>/dev/null | python3 bench/hop_timeline.py "$tg" "$front"
}
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
timeline direct "$RAW_PORT" test_simple_text
timeline own-tool "$TG_PORT" test_simple_text "${AUTH[@]}"
timeline through "$TG_PORT" up_test_simple_text "${AUTH[@]}"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
