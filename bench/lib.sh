# Sourced by bench/run, the by-hand probes and the paired benchmarks (bench/paired.sh, quotas.sh,
# scrub.sh, durable.sh): the load the paired ones share, tools/call on the conformance fixture
# `test_simple_text` (2026-07-28, stateless) driven by wrk and bench/load.lua, what they read from
# wrk's output, and a process's CPU and memory. Each script starts its own servers.

TOOLS_CALL_BODY='{"jsonrpc":"2.0","id":__ID__,"method":"tools/call","params":{"name":"test_simple_text","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"}}}}'

# A free loopback port.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# proc_ticks PID: the process's CPU time (user + system) in clock ticks; the command name, which
# may hold spaces, is cut off first. proc_rss_kib PID: its resident memory in KiB.
proc_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
proc_rss_kib() { awk '/^VmRSS/{print $2}' "/proc/$1/status"; }
# cpu_stat: the machine's CPU ticks so far, all of them and those the hypervisor took for other
# guests (steal), from /proc/stat. steal_since "ALL STEAL": the share of the cores' time since that
# cpu_stat that was stolen, in %. On a shared host a turn that loses a fifth of its cores to steal
# runs a fifth slower, whoever it measures, so paired turns taken moments apart drift with it.
cpu_stat() { awk '/^cpu /{print $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9, $9; exit}' /proc/stat; }
steal_since() {
  awk -v a="$1" -v b="$(cpu_stat)" 'BEGIN {split(a, x, " "); split(b, y, " "); d = y[1] - x[1]
    printf "%.1f", (d > 0 ? 100 * (y[2] - x[2]) / d : 0)}'
}
# ctx_switches PID [voluntary]: the context switches of the process's threads so far, summed;
# both kinds, or with `voluntary` only those where a thread gave up the core (it waited).
ctx_switches() {
  local lines=ctxt_switches
  [[ ${2:-} == voluntary ]] && lines=^voluntary_ctxt_switches
  cat /proc/"$1"/task/*/status 2>/dev/null | awk -v p="$lines" '$0 ~ p {s += $2} END{print s + 0}'
}

# smaps_mib PID file|anon: the process's resident pages backed by files, or anonymous, in MiB.
smaps_mib() {
  awk -v want="$2" '/^Rss:/{rss=$2} /^Anonymous:/{anon=$2}
    END{printf "%.1f", (want == "anon" ? anon : rss - anon) / 1024}' "/proc/$1/smaps_rollup"
}

# memory_mib URL KIND: teamgate_memory_bytes{kind=KIND} from the /metrics beside the MCP endpoint
# URL (served on the listen address), MiB.
memory_mib() {
  curl -s --max-time 5 "${1%/mcp}/metrics" \
    | awk -v k="kind=\"$2\"" '/^teamgate_memory_bytes/ && index($0, k) {printf "%.1f", $NF/1048576}'
}

# answers URL: whether an HTTP server answers a POST at URL at all (any status).
answers() { [[ "$(curl -s -o /dev/null -w '%{http_code}' -m 5 -X POST "$1" -d '{}' || true)" != 000 ]]; }

# upstream_overlay PORT [PROTOCOL]: the configuration overlay that puts the raw rmcp bench-server at
# 127.0.0.1:PORT behind teamgate as upstream "raw" (its tools prefixed up_, unpinned), on a
# PROTOCOL link (2026-07-28 unless given: stateless, as the direct load is).
upstream_overlay() {
  printf '[tools]\nhttp_allowlist = ["http://127.0.0.1:%s/"]\n[[upstreams]]\nname = "raw"\nurl = "http://127.0.0.1:%s/mcp"\nprefix = "up_"\npin = false\nprotocol = "%s"\n' \
    "$1" "$1" "${2:-2026-07-28}"
}

# wrk, from Debian, when it is missing.
need_wrk() {
  command -v wrk >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk >/dev/null
}

# wrk_tools_call PORT CONNECTIONS OUT [WRK_ARGS...]: 5 s of tools/call against 127.0.0.1:PORT/mcp,
# wrk's output in OUT; bounded by wrk -d and timeout. The tool is $BENCH_TOOL (test_simple_text
# unless set: an upstream's copy of it is named with its prefix).
wrk_tools_call() {
  local port=$1 connections=$2 out=$3 tool="${BENCH_TOOL:-test_simple_text}"; shift 3
  BENCH_BODY="${TOOLS_CALL_BODY/test_simple_text/$tool}" BENCH_EXPECT='simple text' BENCH_LIMIT=2000000 \
    timeout 30 wrk -t1 -c"$connections" -d5s "$@" -s bench/load.lua \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'Mcp-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H "Mcp-Name: $tool" \
    "http://127.0.0.1:$port/mcp" > "$out" 2>&1
}

# requests_per_second OUT: wrk's Requests/sec figure.
requests_per_second() { grep -o 'Requests/sec: *[0-9.]*' "$1" | awk '{print $2}'; }

# bench_json OUT: bench/load.lua's summary line (counts, failures, latency percentiles).
bench_json() { grep -o 'BENCHJSON.*' "$1" | sed 's/BENCHJSON //'; }

# start_raw_rmcp DIR: raw rmcp (bench-server from $BIN, target/dist unless set) on a free loopback
# port, its log in DIR; sets RAW_PORT and RAW_PID and waits (10 s at most) until it answers. The
# probes start it before teamgate, whose upstream it may be.
start_raw_rmcp() {
  BIN="${BIN:-target/dist}" RAW_PORT="$(free_port)"
  "$BIN/bench-server" rmcp "127.0.0.1:$RAW_PORT" >"$1/raw.log" 2>&1 &
  RAW_PID=$!
  for _ in $(seq 100); do answers "http://127.0.0.1:$RAW_PORT/mcp" && return 0; sleep 0.1; done
  echo "raw rmcp did not answer on $RAW_PORT (log: $1/raw.log)" >&2
  return 1
}

# stop_probe DIR: the probes' EXIT trap: teamgate stopped (stop_teamgate), raw rmcp stopped, DIR
# removed.
stop_probe() {
  stop_teamgate
  if [[ -n ${RAW_PID:-} ]]; then kill "$RAW_PID" 2>/dev/null; wait "$RAW_PID" 2>/dev/null; fi
  rm -rf "$1"
}

# start_teamgate DIR OVERLAY [WRAPPER...]: teamgate from $BIN (target/dist unless set) on 127.0.0.1:$TG_PORT
# (a free port unless set) with bench/run's configuration (config/conformance.toml,
# bench/teamgate.toml) and the OVERLAY's lines (may be empty), kept in DIR/config: teamgate watches its
# configuration files' folders, and a SQLite database beside them costs its watcher thread about
# 10 us per session opened (BENCHMARKS.md, twelfth session). The store is SQLite in DIR, or with
# STORE=postgres a database of its own on the PostgreSQL at 127.0.0.1:5432. WRAPPER (env, valgrind)
# runs before `teamgate serve`. Sets TG_PORT, TG_PID, TG_CFG, TG_LOG and TOKEN, and waits (60 s at
# most) until the server answers; stop_teamgate stops it and drops its database.
start_teamgate() {
  local dir=$1 overlay=$2; shift 2
  BIN="${BIN:-target/dist}" TG_PORT="${TG_PORT:-$(free_port)}" TG_LOG="$dir/tg.log" TG_PGDB=""
  mkdir -p "$dir/config"
  printf '[server]\nlisten = "127.0.0.1:%s"\n%s' "$TG_PORT" "$overlay" >"$dir/config/tg.toml"
  if [[ ${STORE:-sqlite} == postgres ]]; then
    TG_PGDB="bench_tg_$$"
    psql -q -h 127.0.0.1 -U postgres -d postgres -c "CREATE DATABASE $TG_PGDB" >/dev/null || return 1
    export TEAMGATE__STORE__URL="postgres://postgres@127.0.0.1:5432/$TG_PGDB"
    export TEAMGATE__MCP__REQUEST_STATE_KEYS='["0123456789abcdef0123456789abcdef"]'
  else
    export TEAMGATE__STORE__URL="sqlite://$dir/tg.db"
  fi
  TG_CFG=(--config config/conformance.toml --config bench/teamgate.toml --config "$dir/config/tg.toml")
  "$BIN/teamgate" migrate "${TG_CFG[@]}" >"$TG_LOG" 2>&1
  TOKEN="$("$BIN/teamgate" token "${TG_CFG[@]}" create --user bench --name bench 2>>"$TG_LOG" | tail -n 1)"
  "$@" "$BIN/teamgate" serve "${TG_CFG[@]}" >>"$TG_LOG" 2>&1 &
  TG_PID=$!
  for _ in $(seq 300); do answers "http://127.0.0.1:$TG_PORT/mcp" && return 0; sleep 0.2; done
  echo "teamgate did not answer on $TG_PORT (log: $TG_LOG)" >&2
  return 1
}
stop_teamgate() {
  if [[ -n ${TG_PID:-} ]]; then kill -INT "$TG_PID" 2>/dev/null; wait "$TG_PID" 2>/dev/null; fi
  [[ -z ${TG_PGDB:-} ]] || psql -q -h 127.0.0.1 -U postgres -d postgres \
    -c "DROP DATABASE IF EXISTS $TG_PGDB WITH (FORCE)" >/dev/null 2>&1
}
