# Sourced by bench/run (issue 67's lines): FastMCP's proxy in front of the same upstream teamgate
# fronts, teamgate's CPU per proxied call, the 2-minute flatness run and RSS a minute after a load.
# Uses bench/run's helpers (load, check, set_headers, record, free_port, cpu_ticks, rss_kib).

# FastMCP's create_proxy (bench/sdk/fastmcp_proxy.py) in its own venv, installed once.
fastmcp_python() {
  local venv="$ROOT/.cache/bench-venv"
  if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import fastmcp' 2>/dev/null; then
    python3 -m venv "$venv" >&2 && "$venv/bin/pip" install -q fastmcp >&2 || return 1
  fi
  echo "$venv/bin/python"
}

# measure_fastmcp NAME UPSTREAM_URL: the same stateless tools/call through FastMCP's proxy at c=1 and
# c=16 (fewer: 29 req/s at c=1 was measured; its runs are short, bounded like every other).
measure_fastmcp() {
  local name="$1" up_url="$2" py port pid proxy_url result rps p50 ok failed secs c
  py="$(fastmcp_python)" || { record "$name" note "FastMCP did not install: no FastMCP rows"; return; }
  port="$(free_port)"
  "$py" bench/sdk/fastmcp_proxy.py "$port" "$up_url" >>"$OUT/$name.fastmcp.log" 2>&1 &
  pid=$!
  proxy_url="http://127.0.0.1:$port/mcp"
  local saved_url="$URL" saved_token="$TOKEN"
  URL="$proxy_url" TOKEN=""
  set_headers stateless
  for _ in $(seq 100); do check "$MODERN_BODY" "$TEXT" && break; sleep 0.2; done
  if check "$MODERN_BODY" "$TEXT"; then
    for c in 1 16; do
      result="$(load "fastmcp-$name-c$c" "$c" "$PAIR_DUR" "$MODERN_BODY" "$TEXT")"
      read -r rps p50 _ ok failed secs <<<"$result"
      say "$name: FastMCP proxy c=$c: $rps req/s, p50 $p50 ms, $failed failed"
      record "$name" "fastmcp_c${c}_rps" "$rps"
      record "$name" "fastmcp_c${c}_p50" "$p50"
    done
  else
    record "$name" note "FastMCP's proxy never answered: $(head -c 160 "$OUT/last-reply" | tr '\n\t' '  ')"
  fi
  kill -INT "$pid" 2>/dev/null || true
  for _ in $(seq 25); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  URL="$saved_url" TOKEN="$saved_token"
}

# measure_proxied_cpu NAME VIA_BODY: teamgate's CPU per 10,000 proxied calls at c=64 (its own process
# only: the upstream and wrk are other processes), and through teamgate at c=16 for the FastMCP ratio.
measure_proxied_cpu() {
  local name="$1" via_body="$2" cpu0 cpu1 result rps ok
  set_headers stateless "up_$TOOL"
  cpu0="$(cpu_ticks)"
  result="$(load "up-$name-cpu-c64" 64 "$DUR" "$via_body" "$TEXT")"
  cpu1="$(cpu_ticks)"
  read -r rps _ _ ok _ _ <<<"$result"
  if (( ok > 0 )); then
    record "$name" up_c64_cpu10k "$(awk -v t=$((cpu1 - cpu0)) -v hz="$TICKS" -v n="$ok" 'BEGIN{printf "%.3f", t/hz/n*10000}')"
  fi
  result="$(load "up-$name-c16" 16 "$PAIR_DUR" "$via_body" "$TEXT")"
  read -r rps _ _ _ _ _ <<<"$result"
  record "$name" up_c16_rps "$rps"
}

# measure_flat NAME: the budget's flatness line: c=64 stateless tools/call for FLAT_WINDOWS windows of
# FLAT_SECS each back to back (2 minutes in a full run), the audit trail on; the first and last
# windows' req/s and the database's growth.
measure_flat() {
  local name="$1" w result rps first="" last="" size0 size1
  set_headers stateless
  check "$MODERN_BODY" "$TEXT" || { record "$name" note "flatness: tools/call refused"; return; }
  size0="$(db_kib)"
  for w in $(seq "$FLAT_WINDOWS"); do
    result="$(load "flat-$name-$w" 64 "$FLAT_SECS" "$MODERN_BODY" "$TEXT")"
    read -r rps _ _ _ _ _ <<<"$result"
    [[ -z "$first" ]] && first="$rps"
    last="$rps"
    record "$name" "flat_rps_$w" "$rps"
  done
  size1="$(db_kib)"
  say "$name: flat c=64: first ${FLAT_SECS}s $first req/s, last $last req/s"
  record "$name" flat_first_rps "$first"
  record "$name" flat_last_rps "$last"
  record "$name" flat_db_growth_mib "$(awk -v a="$size0" -v b="$size1" 'BEGIN{printf "%.1f", (b-a)/1024}')"
}

# db_kib: the store's size in KiB: the SQLite file with its WAL, or the PostgreSQL database.
db_kib() {
  if [[ "$TEAMGATE__STORE__URL" == sqlite://* ]]; then
    { du -sk "${TEAMGATE__STORE__URL#sqlite://}"* 2>/dev/null || true; } | awk '{s+=$1} END{print s+0}'
  else
    psql -qtA -h 127.0.0.1 -U postgres -d postgres \
      -c "select pg_database_size('$PGDB') / 1024" 2>/dev/null || echo 0
  fi
}

# measure_rss_return NAME: RSS right after the loads, and RSS_WAIT seconds later (the budget: back
# within 20 % of idle a minute after the load stops).
measure_rss_return() {
  local name="$1"
  record "$name" rss_after_load_mib "$(awk -v k="$(rss_kib)" 'BEGIN{printf "%.1f", k/1024}')"
  sleep "$RSS_WAIT"
  record "$name" rss_after_wait_mib "$(awk -v k="$(rss_kib)" 'BEGIN{printf "%.1f", k/1024}')"
  # Where it lives: the allocator's own account (teamgate_memory_bytes) against the RSS.
  local kind
  for kind in allocated resident metadata; do
    record "$name" "heap_${kind}_after_wait_mib" "$(memory_mib "$URL" "$kind")"
  done
  # The rest by kind of page: the binary's and libraries' (file-backed) against anonymous memory.
  record "$name" rss_file_after_wait_mib "$(smaps_mib "$PID" file)"
  record "$name" rss_anon_after_wait_mib "$(smaps_mib "$PID" anon)"
}

